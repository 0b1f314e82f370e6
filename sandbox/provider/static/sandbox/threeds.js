// Tell the merchant page the challenge is over. The message carries only the payment id:
// the merchant's backend reads the outcome from GET /payments/{id}.
(function () {
  var result = document.getElementById("result");
  if (!result || result.dataset.notify !== "1" || window.parent === window) return;
  window.parent.postMessage({ paymentId: result.dataset.paymentId }, result.dataset.targetOrigin);
})();
