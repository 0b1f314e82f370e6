// Tell the merchant page the challenge is over. The message carries only the payment id:
// the merchant's backend reads the outcome from GET /payments/{id}. Stand-alone (not in a
// frame), the page offers the way back to the store instead.
(function () {
  var result = document.getElementById("result");
  if (!result) return;
  if (window.parent === window) {
    var back = document.getElementById("return-link");
    if (back) back.hidden = false;
    return;
  }
  if (result.dataset.notify !== "1") return;
  window.parent.postMessage({ paymentId: result.dataset.paymentId }, result.dataset.targetOrigin);
})();
