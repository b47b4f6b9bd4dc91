module github.com/arkaweb/arka

go 1.26.8
