package static

import "strings"

// contentTypes maps a lower-case file extension to its media type. Text
// types, JavaScript, JSON, SVG and XML carry charset=utf-8, the encoding of
// nearly every such file today. Unknown extensions are
// application/octet-stream, which browsers download rather than render.
var contentTypes = map[string]string{
	".html":        "text/html; charset=utf-8",
	".htm":         "text/html; charset=utf-8",
	".shtml":       "text/html; charset=utf-8",
	".css":         "text/css; charset=utf-8",
	".js":          "text/javascript; charset=utf-8",
	".mjs":         "text/javascript; charset=utf-8",
	".cjs":         "text/javascript; charset=utf-8",
	".json":        "application/json; charset=utf-8",
	".map":         "application/json; charset=utf-8",
	".jsonld":      "application/ld+json; charset=utf-8",
	".webmanifest": "application/manifest+json; charset=utf-8",
	".txt":         "text/plain; charset=utf-8",
	".text":        "text/plain; charset=utf-8",
	".log":         "text/plain; charset=utf-8",
	".md":          "text/markdown; charset=utf-8",
	".markdown":    "text/markdown; charset=utf-8",
	".csv":         "text/csv; charset=utf-8",
	".tsv":         "text/tab-separated-values; charset=utf-8",
	".ics":         "text/calendar; charset=utf-8",
	".vtt":         "text/vtt; charset=utf-8",
	".xml":         "application/xml; charset=utf-8",
	".xsl":         "application/xml; charset=utf-8",
	".rss":         "application/rss+xml; charset=utf-8",
	".atom":        "application/atom+xml; charset=utf-8",
	".svg":         "image/svg+xml; charset=utf-8",
	".yaml":        "application/yaml; charset=utf-8",
	".yml":         "application/yaml; charset=utf-8",
	".toml":        "application/toml; charset=utf-8",
	".wasm":        "application/wasm",
	".pdf":         "application/pdf",
	".png":         "image/png",
	".apng":        "image/apng",
	".jpg":         "image/jpeg",
	".jpeg":        "image/jpeg",
	".jfif":        "image/jpeg",
	".gif":         "image/gif",
	".webp":        "image/webp",
	".avif":        "image/avif",
	".jxl":         "image/jxl",
	".heic":        "image/heic",
	".bmp":         "image/bmp",
	".ico":         "image/vnd.microsoft.icon",
	".tif":         "image/tiff",
	".tiff":        "image/tiff",
	".woff":        "font/woff",
	".woff2":       "font/woff2",
	".ttf":         "font/ttf",
	".otf":         "font/otf",
	".eot":         "application/vnd.ms-fontobject",
	".mp3":         "audio/mpeg",
	".ogg":         "audio/ogg",
	".oga":         "audio/ogg",
	".opus":        "audio/ogg",
	".flac":        "audio/flac",
	".wav":         "audio/wav",
	".m4a":         "audio/mp4",
	".aac":         "audio/aac",
	".mp4":         "video/mp4",
	".m4v":         "video/mp4",
	".webm":        "video/webm",
	".ogv":         "video/ogg",
	".mov":         "video/quicktime",
	".mkv":         "video/x-matroska",
	".m3u8":        "application/vnd.apple.mpegurl",
	".ts":          "video/mp2t",
	".zip":         "application/zip",
	".gz":          "application/gzip",
	".tgz":         "application/gzip",
	".br":          "application/x-brotli",
	".zst":         "application/zstd",
	".xz":          "application/x-xz",
	".bz2":         "application/x-bzip2",
	".7z":          "application/x-7z-compressed",
	".tar":         "application/x-tar",
	".rar":         "application/vnd.rar",
	".deb":         "application/vnd.debian.binary-package",
	".apk":         "application/vnd.android.package-archive",
	".iso":         "application/x-iso9660-image",
	".img":         "application/octet-stream",
	".bin":         "application/octet-stream",
	".exe":         "application/octet-stream",
	".dmg":         "application/octet-stream",
	".doc":         "application/msword",
	".docx":        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	".xls":         "application/vnd.ms-excel",
	".xlsx":        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	".ppt":         "application/vnd.ms-powerpoint",
	".pptx":        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
	".odt":         "application/vnd.oasis.opendocument.text",
	".ods":         "application/vnd.oasis.opendocument.spreadsheet",
	".epub":        "application/epub+zip",
	".gpx":         "application/gpx+xml; charset=utf-8",
	".kml":         "application/vnd.google-earth.kml+xml; charset=utf-8",
	".pem":         "application/x-pem-file",
	".crt":         "application/x-x509-ca-cert",
	".sh":          "text/x-shellscript; charset=utf-8",
	".py":          "text/x-python; charset=utf-8",
	".c":           "text/x-c; charset=utf-8",
	".h":           "text/x-c; charset=utf-8",
	".go":          "text/x-go; charset=utf-8",
	".rs":          "text/x-rust; charset=utf-8",
}

const defaultContentType = "application/octet-stream"

// ContentType returns the media type for a file name by its extension
// (case-insensitive), or application/octet-stream.
func ContentType(name string) string {
	i := strings.LastIndexByte(name, '.')
	if i < 0 || strings.IndexByte(name[i:], '/') >= 0 {
		return defaultContentType
	}
	ext := name[i:]
	if t, ok := contentTypes[ext]; ok {
		return t
	}
	if t, ok := contentTypes[strings.ToLower(ext)]; ok {
		return t
	}
	return defaultContentType
}
