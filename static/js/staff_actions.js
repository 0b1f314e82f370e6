// The admin's staff actions in progress (templates/admin/staff_actions.html): ask the shop, every
// `data-every` ms, how many of them are still open (`data-status-url`, JSON `{"open": n}`), and
// reload the page once none is, so that it shows what they did. Loaded with `defer`; no inline
// code (the shop's CSP).
(function () {
  "use strict";

  var box = document.getElementById("staff-actions");
  if (!box) return;
  var url = box.getAttribute("data-status-url");
  var every = parseInt(box.getAttribute("data-every"), 10) || 1000;

  function later(delay) {
    window.setTimeout(ask, delay);
  }

  function ask() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) throw new Error("status " + response.status);
        return response.json();
      })
      .then(function (answer) {
        if (answer.open === 0) {
          window.location.reload();
        } else {
          later(every);
        }
      })
      .catch(function () {
        later(every * 5); // the shop is unreachable for now: ask again, less often
      });
  }

  later(every);
})();
