// The console's only assets, served from our own origin (the CSP allows nothing else): a style
// sheet and one small script, no framework, no fonts (the system's), no build step.

/** Served as /ui/style.css: the Content-Security-Policy allows no inline style. */
export const STYLE = `*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;margin:0;color:#1d1d1d;background:#fff;overflow-wrap:anywhere;line-height:1.4}
td[data-label=summary],td[data-label=outcome],code,dd{overflow-wrap:anywhere}@media (min-width:701px){table.fleet th,table.incidents th,td[data-label=state],td[data-label=mode],table.events th,table.events td:not([data-label=note]){white-space:nowrap}}td[data-label=note]{overflow-wrap:anywhere}
body.login{max-width:28rem;margin:4rem auto;padding:0 1rem}body.login input{width:100%;padding:.4rem;margin:.4rem 0}
header{background:#17324d;color:#fff;padding:.5rem 1rem}header a{color:#fff}nav{display:flex;flex-wrap:wrap;gap:.4rem 1rem;align-items:center}
nav .who{margin-left:auto}main{padding:.5rem 1rem 2rem;max-width:80rem}
h1{font-size:1.35rem;margin:.6rem 0}h2{font-size:1.1rem;margin:1.2rem 0 .4rem}
a{color:#0b4f8a}a:focus,button:focus,input:focus,select:focus,summary:focus{outline:3px solid #f0a500;outline-offset:1px}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1rem}
th,td{border-bottom:1px solid #d5d5d5;padding:.3rem .45rem;text-align:left;vertical-align:top;font-size:.92rem}th{background:#f1f3f5}
.banner{padding:.5rem .8rem;margin:.4rem 0;border-radius:4px;border-left:5px solid}.warn{background:#fff4d0;border-color:#b07d00}
.bad{background:#fbe0e2;border-color:#a11}.unverified{color:#a11}.ok{background:#e3f4e7;border-color:#176b2c}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.85rem}
pre{background:#f5f5f5;padding:.4rem;overflow:auto;max-height:16rem;max-width:100%;white-space:pre;margin:.2rem 0}
pre.argv{white-space:pre-wrap;overflow-wrap:anywhere;background:#eef3f8;border-left:3px solid #0b4f8a}
.o-succeeded,.v-holds{color:#176b2c}.o-failed,.o-refused,.v-fails,.v-missing,.v-contradicted{color:#a11}.o-waiting{color:#7a4f00}
.v{font-weight:600;text-transform:uppercase;font-size:.78rem}
.counts{display:flex;flex-wrap:wrap;gap:.4rem;margin:.4rem 0;padding:0;list-style:none}
.counts a{display:inline-block;padding:.2rem .55rem;border:1px solid #b9c3cc;border-radius:1rem;text-decoration:none}
.counts a[aria-current]{background:#17324d;color:#fff}
form.filters{display:flex;flex-wrap:wrap;gap:.4rem .8rem;align-items:flex-end;margin:.6rem 0}
form.filters label{display:flex;flex-direction:column;font-size:.85rem}
input,select,button{font:inherit;padding:.3rem .45rem;max-width:100%}button{cursor:pointer}button[disabled]{cursor:not-allowed;opacity:.55}
form.action{display:flex;flex-wrap:wrap;gap:.3rem .6rem;align-items:center;margin:.4rem 0;padding:.4rem;border:1px solid #d5d5d5;border-radius:4px}
form.action input[name=why]{flex:1 1 14rem}form.inline{display:inline}.denied{color:#a11;flex-basis:100%}
.step{border:1px solid #d5d5d5;border-radius:4px;padding:.4rem .6rem;margin:.5rem 0}.step h3{font-size:1rem;margin:.1rem 0 .3rem}
.tag{display:inline-block;font-size:.75rem;padding:0 .35rem;border-radius:3px;background:#e6e6e6;margin-left:.3rem}.tag.hi{background:#a11;color:#fff}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.2rem .8rem;margin:.4rem 0}dl.facts dt{font-weight:600}dl.facts dd{margin:0}
.pager{display:flex;gap:1rem;margin:.6rem 0}.muted{color:#555}.live-status{position:absolute;left:-9999px}
@media (max-width:700px){
 main{padding:.4rem .6rem 2rem}
 table.incidents thead,table.events thead{display:none}table.incidents tr,table.fleet tbody tr,table.events tr{display:block;border:1px solid #d5d5d5;border-radius:4px;margin:.4rem 0;padding:.2rem}
 table.incidents td,table.fleet td,table.events td{display:block;border:0;padding:.1rem .3rem;white-space:normal}table.incidents td[data-label]::before,table.fleet td[data-label]::before,table.events td[data-label]::before{content:attr(data-label) ": ";font-weight:600}
 table.fleet thead tr{display:flex;flex-wrap:wrap;gap:.2rem}table.fleet th{border:0;padding:.1rem .3rem}
 dl.facts{grid-template-columns:1fr}dl.facts dd{margin-bottom:.3rem}
}`;

/**
 * Served as /ui/console.js. Refreshes the page's live region (`main[data-live]`) by polling its
 * URL every second with If-None-Match (304: nothing changed, nothing done), never while the
 * operator is typing in it; writes relative times next to absolute ones. DOMParser documents do
 * not run scripts, and what is swapped in is our own escaped HTML from our own origin.
 */
export const SCRIPT = `(function () {
  'use strict';
  var main = document.getElementById('live');
  var status = document.getElementById('live-status');
  function ago(ms) {
    var s = Math.max(0, Math.round(ms / 1000));
    if (s < 60) return s + ' s';
    var m = Math.floor(s / 60);
    if (m < 60) return m + ' min';
    var h = Math.floor(m / 60);
    if (h < 48) return h + ' h ' + (m % 60) + ' min';
    return Math.floor(h / 24) + ' d';
  }
  function relTimes(root) {
    var now = Date.now();
    root.querySelectorAll('time[data-rel]').forEach(function (t) {
      var at = Date.parse(t.getAttribute('datetime'));
      if (isNaN(at)) return;
      var span = t.nextElementSibling && t.nextElementSibling.classList.contains('rel') ? t.nextElementSibling : null;
      if (!span) { span = document.createElement('span'); span.className = 'rel muted'; t.after(span); }
      span.textContent = ' (' + (at <= now ? ago(now - at) + ' ago' : 'in ' + ago(at - now)) + ')';
    });
    root.querySelectorAll('[data-since]').forEach(function (w) {
      var at = Date.parse(w.getAttribute('data-since'));
      if (isNaN(at)) return;
      var b = w.querySelector('b.for');
      if (!b) { b = document.createElement('b'); b.className = 'for'; w.prepend(b); }
      b.textContent = 'waiting ' + ago(now - at) + ' ';
    });
  }
  relTimes(document);
  setInterval(function () { relTimes(document); }, 1000);
  if (!main || !main.dataset.live) return;
  var etag = null;
  var busy = false;
  function typing() {
    var a = document.activeElement;
    return a && main.contains(a) && /^(input|select|textarea|button)$/i.test(a.tagName);
  }
  function openDetails() {
    var open = [];
    main.querySelectorAll('details[id][open]').forEach(function (d) { open.push(d.id); });
    return open;
  }
  function poll() {
    if (busy || document.hidden || typing()) return;
    busy = true;
    var headers = { 'x-console-poll': '1' };
    if (etag) headers['if-none-match'] = etag;
    fetch(main.dataset.live, { headers: headers, credentials: 'same-origin', cache: 'no-store' }).then(function (r) {
      if (r.status === 304) return null;
      if (r.status === 401) { status.textContent = 'Signed out: reload to sign in again.'; return null; }
      if (!r.ok) { status.textContent = 'Live updates failed (' + r.status + '); retrying.'; return null; }
      etag = r.headers.get('etag');
      return r.text();
    }).then(function (html) {
      if (!html || typing()) return;
      var doc = new DOMParser().parseFromString(html, 'text/html');
      var fresh = doc.getElementById('live');
      if (!fresh) return;
      var open = openDetails();
      main.replaceChildren.apply(main, Array.prototype.map.call(fresh.childNodes, function (n) { return document.importNode(n, true); }));
      open.forEach(function (id) { var d = document.getElementById(id); if (d) d.open = true; });
      relTimes(main);
      status.textContent = 'Updated.';
    }).catch(function () { status.textContent = 'Live updates failed; retrying.'; }).finally(function () { busy = false; });
  }
  setInterval(poll, 1000);
})();
`;
