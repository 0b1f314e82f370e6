(function () {
  "use strict";
  var sdk = new CheckoutSDK(document.body.dataset.key);
  var card = null;
  var result = document.getElementById("result");
  var events = document.getElementById("events");

  function mount() {
    if (card) card.unmount();
    var options = { theme: document.getElementById("theme").value };
    var locale = document.getElementById("locale").value;
    if (locale) options.locale = locale;
    card = sdk.element("Card", options);
    card.on("change", function (change) {
      events.textContent = JSON.stringify(change) + "\n" + events.textContent.split("\n").slice(0, 9).join("\n");
    });
    card.mount("#card-element");
  }

  document.getElementById("theme").addEventListener("change", mount);
  document.getElementById("locale").addEventListener("change", mount);
  document.getElementById("remount").addEventListener("click", mount);
  document.getElementById("tokenize").addEventListener("click", function () {
    result.textContent = "…";
    Promise.all([card.cardToken(), sdk.preventionData()]).then(function (answers) {
      result.textContent = JSON.stringify({ token: answers[0], prevention_data: answers[1] }, null, 2);
    }, function (error) {
      result.textContent = "Error " + JSON.stringify(error, null, 2);
    });
  });
  mount();
})();
