// Admin pages with work in progress: the staff actions of a page (templates/admin/
// staff_actions.html, `#staff-actions`) and the accountant's exports (admin/books/booksexport/
// change_list.html, `#books-exports`). Each of them, by its `data-status-url`, is asked, every
// `data-every` ms, how much of its work is still open (JSON `{"open": n}`, and for exports
// `"exports": [{"id", "percent"}]`, shown on each export's progress bar); the page reloads once
// none is open, so that it shows what the work did. Loaded with `defer`; no inline code (the
// shop's CSP).
(function () {
  "use strict";

  function show(exports) {
    exports.forEach(function (item) {
      var bar = document.querySelector('progress[data-export="' + item.id + '"]');
      if (!bar) return;
      bar.value = item.percent;
      var text = bar.nextElementSibling;
      if (text) text.textContent = item.percent + "%";
    });
  }

  function follow(box) {
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
          show(answer.exports || []);
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
  }

  document.querySelectorAll("#staff-actions[data-status-url], #books-exports[data-status-url]").forEach(follow);
})();
