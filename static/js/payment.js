// The payment page: the provider's card form (SDK iframe), one attempt per "Pay", and the
// 3-D Secure modal. The browser only ever sends the shop a card token, never card data.
(function () {
  "use strict";
  var root = document.getElementById("payment");
  if (!root || !window.CheckoutSDK) return;
  var cfg = root.dataset;
  var button = document.getElementById("pay-button");
  var status = document.getElementById("pay-status");
  var dialog = document.getElementById("threeds-dialog");
  var frameBox = document.getElementById("threeds-frame");
  var sdk = new CheckoutSDK(cfg.publicKey);
  var card = sdk.element("Card", { theme: cfg.theme, locale: cfg.locale });
  card.mount("#card-element");

  // Interest-free installments: offered while the card form reports a BIN that the catalogue's
  // installment_pattern of its brand names (the server checks it again, the provider last).
  var plans = document.getElementById("installments");
  var patternsScript = document.getElementById("installment-patterns");
  var patterns = patternsScript ? JSON.parse(patternsScript.textContent) : {};
  var cardBin = "";

  function offersInstallments(brand, bin) {
    if (!plans || !brand || !bin || !patterns[brand]) return false;
    try { return new RegExp(patterns[brand]).test(bin); } catch (e) { return false; }
  }

  card.on("change", function (event) {
    cardBin = event && event.bin ? event.bin : "";
    var offered = offersInstallments(event && event.brand, cardBin);
    if (!plans || plans.hidden === !offered) return;
    plans.hidden = !offered;
    if (!offered) plans.querySelector('input[value="1"]').checked = true;
  });

  function chosenInstallments() {
    if (!plans || plans.hidden) return 1;
    var chosen = plans.querySelector("input:checked");
    return chosen ? parseInt(chosen.value, 10) : 1;
  }

  var busy = false;
  var attemptId = newAttemptId();
  var challenge = null; // {paymentId, origin, frame, timer}

  function newAttemptId() {
    var bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
  }

  function say(text, kind) {
    status.textContent = text || "";
    status.className = "pay-status" + (kind ? " " + kind : "");
  }

  function release() {
    busy = false;
    button.disabled = false;
  }

  function postJSON(url, body) {
    return fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": cfg.csrf },
      body: JSON.stringify(body),
    }).then(readJSON);
  }

  function readJSON(response) {
    return response.json().catch(function () { return { error: "unreadable", message: cfg.textError }; });
  }

  // While the attempt is processed (its payment is created by the shop's worker) or its
  // outcome is being confirmed, the status is asked for again: every half second at first,
  // then less often (a provider that takes its time is not asked about in a loop).
  var followTimer = null;
  var followDelays = [500, 500, 500, 500, 1000, 1000, 1000, 2000, 2000, 2000, 3000];
  var followed = 0;

  function follow(outcome) {
    var delay = followDelays[Math.min(followed, followDelays.length - 1)];
    followed += 1;
    say(outcome.message || cfg.textProcessing, "info");
    clearTimeout(followTimer);
    followTimer = setTimeout(function () { check(""); }, delay);
  }

  function handle(outcome) {
    if (outcome.redirect) {
      window.location.assign(outcome.redirect);
      return;
    }
    if (outcome.result === "pending" && outcome.three_ds_url) {
      followed = 0;
      if (!challenge || challenge.paymentId !== outcome.payment_id) {
        openChallenge(outcome.payment_id, outcome.three_ds_url);
      }
      return;
    }
    if (outcome.result === "processing" || outcome.result === "unknown") {
      follow(outcome);
      return;
    }
    // Declined or refused: show why, and let the shopper try again with a fresh attempt.
    followed = 0;
    closeChallenge();
    say(outcome.message || cfg.textError, "error");
    attemptId = newAttemptId();
    release();
  }

  function check(paymentId) {
    var url = cfg.statusUrl + (paymentId ? "?payment_id=" + encodeURIComponent(paymentId) : "");
    return fetch(url, { credentials: "same-origin" }).then(readJSON).then(function (outcome) {
      if (outcome.result === "pending" && challenge) return; // still with the bank
      handle(outcome);
    }, function () {
      // The shop did not answer (the network): the attempt is on its way; ask again.
      follow({});
    });
  }

  function pay() {
    if (busy) return;
    busy = true;
    button.disabled = true;
    say(cfg.textProcessing, "info");
    Promise.all([card.cardToken(), sdk.preventionData()]).then(function (answers) {
      return postJSON(cfg.attemptUrl, {
        card_token: answers[0].id, attempt_id: attemptId,
        session_id: answers[1].session_id, user_agent: answers[1].user_agent,
        installments: chosenInstallments(), card_bin: cardBin,
      }).then(handle);
    }, function (error) {
      // CL2200 / CL2290 are shown inside the card form; anything else gets a general message.
      say(error && (error.code === "CL2200" || error.code === "CL2290") ? "" : cfg.textError, "error");
      release();
    }).catch(function () { say(cfg.textError, "error"); release(); });
  }

  // The 3-D Secure page posts {paymentId} when done. It is a hint, never proof: the shop's
  // server asks the provider. Accepted only from that page's origin and that iframe's window,
  // and only for the payment just created.
  function onMessage(event) {
    if (!challenge || event.origin !== challenge.origin) return;
    if (event.source !== challenge.frame.contentWindow) return;
    if (!event.data || typeof event.data !== "object" || event.data.paymentId !== challenge.paymentId) return;
    say(cfg.textChecking, "info");
    check(challenge.paymentId);
  }

  function openChallenge(paymentId, url) {
    closeChallenge();
    var frame = document.createElement("iframe");
    frame.src = url;
    frame.title = document.getElementById("threeds-title").textContent;
    frame.className = "threeds-frame";
    frameBox.appendChild(frame);
    challenge = { paymentId: paymentId, origin: new URL(url).origin, frame: frame,
                  timer: setInterval(function () { check(paymentId); }, 4000) };
    window.addEventListener("message", onMessage);
    if (dialog.showModal) dialog.showModal(); else dialog.setAttribute("open", "");
  }

  function closeChallenge() {
    if (!challenge) return;
    clearInterval(challenge.timer);
    window.removeEventListener("message", onMessage);
    challenge = null;
    frameBox.textContent = "";
    if (dialog.open) dialog.close();
  }

  // Closing the challenge leaves the payment unfinished (nothing is charged): say so, and let
  // the shopper try again with a fresh attempt.
  document.getElementById("threeds-close").addEventListener("click", function () {
    closeChallenge();
    say(cfg.textUnfinished, "error");
    attemptId = newAttemptId();
    release();
  });
  dialog.addEventListener("cancel", function (event) {
    event.preventDefault();
    document.getElementById("threeds-close").click();
  });
  button.addEventListener("click", pay);

  // A reload while the bank waits for its verification: the server found the challenge still
  // pending with the provider, and it opens again.
  if (cfg.resumePayment && cfg.resumeUrl) {
    busy = true;
    button.disabled = true;
    say(cfg.textResumed, "info");
    openChallenge(cfg.resumePayment, cfg.resumeUrl);
  }
})();

// A page brought back from the browser's memory ("back" after paying) is asked for again: the
// server sends a paid order's shopper to its page.
window.addEventListener("pageshow", function (event) {
  if (event.persisted) window.location.reload();
});
