// The accountant's exports in progress (admin/books/booksexport/change_list.html): ask the shop,
// every `data-every` ms, how far each export is (`data-status-url`, JSON `{"open": n,
// "exports": [{"id", "percent"}]}`), show it on the export's progress bar, and reload the page
// once none is open, so that it offers the files. Loaded with `defer`; no inline code (the
// shop's CSP).
(function () {
  "use strict";

  var box = document.getElementById("books-exports");
  if (!box) return;
  var url = box.getAttribute("data-status-url");
  var every = parseInt(box.getAttribute("data-every"), 10) || 2000;

  function later(delay) {
    window.setTimeout(ask, delay);
  }

  function show(exports) {
    exports.forEach(function (item) {
      var bar = document.querySelector('progress[data-export="' + item.id + '"]');
      if (!bar) return;
      bar.value = item.percent;
      var text = bar.nextElementSibling;
      if (text) text.textContent = item.percent + "%";
    });
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
})();
