// Package webui checks Fenix runs in the Temporal Web UI with a real
// browser: a test starts the dev server with its embedded Web UI and a
// Fenix worker, runs examples/calculator.json, and drives headless Chromium
// (github.com/chromedp/chromedp) through the workflow list, the run's event
// history and timeline, and a search attribute filter.
//
// It has only tests. They need Debian's chromium package (/usr/bin/chromium,
// or the binary named by $FENIX_CHROMIUM) and skip without it, and in
// -short mode. Screenshots go to the test's temporary directory, or to
// $FENIX_WEBUI_ARTIFACTS when it is set (kept after the run).
package webui
