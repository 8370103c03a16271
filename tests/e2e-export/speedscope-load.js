// speedscope-load.js - run inside speedscope's own page (its #localProfilePath hook
// loads a script that calls speedscope.loadFileFromBase64): hand speedscope the
// profile, let its importer read it, then press its "Export" tab and put the JSON
// that speedscope's exporter writes into the page as <pre id="ss-export">, where
// Chromium's --dump-dom shows it. Errors (speedscope's alerts, exceptions) go to
// <pre id="ss-error">. The test prepends "var SS_NAME = ..., SS_B64 = ...;".
/* global SS_NAME, SS_B64, speedscope */
(function () {
	'use strict';
	function put(id, text) {
		var pre = document.createElement('pre');

		pre.id = id;
		pre.textContent = text;
		document.documentElement.appendChild(pre);
	}
	window.alert = function (msg) { put('ss-error', 'alert: ' + msg); };
	window.addEventListener('error', function (e) { put('ss-error', 'error: ' + e.message); });
	window.addEventListener('unhandledrejection', function (e) {
		put('ss-error', 'rejection: ' + e.reason);
	});
	// the exporter saves a Blob of the JSON text through a clicked <a download>: keep
	// the text as it is made (synchronously: Chromium's virtual time does not wait for
	// a Blob read) and let the click do nothing
	var RealBlob = window.Blob;
	window.Blob = function (parts, opts) {
		if (opts && opts.type === 'text/json')
			put('ss-export', parts.join(''));
		return new RealBlob(parts, opts);
	};
	HTMLAnchorElement.prototype.click = function () {};

	speedscope.loadFileFromBase64(SS_NAME, SS_B64);
	var tries = 0;
	(function poll() {
		// the toolbar (with its Export tab) appears once a profile is loaded
		var tabs = Array.prototype.filter.call(document.querySelectorAll('div'), function (d) {
			return d.childNodes.length === 2 && d.lastChild.nodeType === 3 &&
				d.lastChild.textContent === 'Export';
		});
		if (tabs.length && document.title !== 'speedscope') {
			tabs[0].click();
			return;
		}
		if (++tries < 1200)
			setTimeout(poll, 50);
		else
			put('ss-error', 'no profile loaded (title "' + document.title + '")');
	})();
})();
