package main

import (
	"encoding/json"
	"log"
	"sync"

	"github.com/arkaweb/arka/appliance/deploy"
	"github.com/arkaweb/arka/server/status"
)

// applianceStatus is the file Arka's status page reads
// (status.ApplianceEnv): the deployed site, the settings file, Wi-Fi.
const applianceStatus = "/tmp/arka/appliance.json"

var statusMu sync.Mutex

// writeApplianceStatus rewrites applianceStatus from the settings state
// and the deploy store (at boot and after every deploy or rollback).
func writeApplianceStatus(sets *settingsState, store *deploy.Store) {
	statusMu.Lock()
	defer statusMu.Unlock()
	a := status.Appliance{Hostname: hostnameOf()}
	if sets != nil {
		a.Settings = status.ApplianceSettings{File: sets.File, Found: sets.Found, Restored: sets.Restored,
			Errors: sets.Errors, Applied: sets.Applied, WiFi: sets.WiFi}
		if sets.wifiIface != "" {
			a.WiFi = &status.WiFi{Interface: sets.wifiIface}
			if len(sets.s.WiFi.Networks) > 0 {
				a.WiFi.SSID = sets.s.WiFi.Networks[0].SSID
			}
		}
	}
	if store != nil {
		st := store.State()
		if g := st.Current; g != nil {
			a.Deploy = status.ApplianceDeploy{Generation: g.ID, Deployed: g.Deployed, From: g.From, Files: g.Files, Bytes: g.Bytes}
		}
		if st.Previous != nil {
			a.Deploy.Previous = st.Previous.ID
		}
		a.Deploy.LastError, a.Deploy.LastErrorAt = st.LastError, st.LastErrorAt
		a.Deploy.Receiving = st.Receiving
	}
	b, _ := json.MarshalIndent(a, "", "  ")
	if err := writeAtomic(applianceStatus, b, 0o644); err != nil {
		log.Printf("status: %v", err)
	}
}
