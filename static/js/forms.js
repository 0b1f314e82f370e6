// The storefront's forms: after an invalid submit, focus goes to the error summary (so a screen
// reader reads it and the keyboard starts there), and each of its links moves focus to its field
// with the field's label in view. Loaded with `defer`; no inline code (the shop's CSP).
(function () {
  "use strict";

  function fieldFor(link) {
    var id = decodeURIComponent((link.getAttribute("href") || "").slice(1));
    return id ? document.getElementById(id) : null;
  }

  function focusField(field) {
    var label = document.querySelector('label[for="' + field.id + '"]');
    field.focus({ preventScroll: true });
    (label || field).scrollIntoView({ block: "center" });
  }

  document.querySelectorAll(".error-summary").forEach(function (summary) {
    summary.addEventListener("click", function (event) {
      var link = event.target.closest("a[href^='#']");
      var field = link && fieldFor(link);
      if (!field) return;
      event.preventDefault();
      focusField(field);
    });
  });

  var first = document.querySelector(".error-summary[data-focus-on-load]");
  if (first) {
    first.focus();
    first.scrollIntoView({ block: "start" });
  }
})();
