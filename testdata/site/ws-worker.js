// A worker's own WebSocket: it answers "gone" once the socket has given
// up or closed, so uploads.html can tell its test when to count.
var other = new URLSearchParams(location.search).get("other") || location.origin;
try {
  var ws = new WebSocket(other.replace(/^http/, "ws") + "/record?kind=ws-worker");
  ws.onerror = function () { postMessage("gone"); };
  ws.onclose = function () { postMessage("gone"); };
  ws.onopen = function () { ws.close(); };
} catch (e) {
  postMessage("gone");
}
