/*! Checkout SDK v1: mounts the provider's card form in an iframe and returns card tokens.
 *
 *   const sdk = new CheckoutSDK("<public API key>");           // optional {baseUrl}
 *   const card = sdk.element("Card", {theme: "eco", locale: "es"});
 *   card.mount("#card-element");
 *   card.on("change", ({complete, brand, bin, error}) => {});
 *   const token = await card.cardToken();   // {id, card, payment_method_id, expires_at}
 *   const {session_id, user_agent} = await sdk.preventionData();
 *
 * The card number never leaves the iframe: the page gets the token, the brand and the BIN.
 */
(function (global) {
  "use strict";

  var SCRIPT = document.currentScript;
  var FRAME_SOURCE = "checkout-card";
  var SDK_SOURCE = "checkout-sdk";
  var THEMES = ["eco", "dark"];
  var LOCALES = ["en", "es"];
  var TIMEOUT_MS = 30000;

  function originOf(url) {
    return new URL(url, global.location.href).origin;
  }

  function browserLocale() {
    var lang = (global.navigator.language || "en").toLowerCase();
    return lang.indexOf("es") === 0 ? "es" : "en";
  }

  function randomId() {
    var bytes = new Uint8Array(16);
    global.crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) {
      return ("0" + b.toString(16)).slice(-2);
    }).join("");
  }

  function sdkError(code, message) {
    return { code: code, message: message };
  }

  // One session id per page session, shared by every SDK instance of the page.
  var sessionId = null;
  function pageSessionId() {
    if (!sessionId) sessionId = "sess_" + randomId();
    return sessionId;
  }

  function CardElement(sdk, options) {
    options = options || {};
    this._sdk = sdk;
    this._theme = THEMES.indexOf(options.theme) >= 0 ? options.theme : "eco";
    this._locale = LOCALES.indexOf(options.locale) >= 0 ? options.locale : browserLocale();
    this._frameId = randomId();
    this._handlers = {};
    this._pending = {};
    this._iframe = null;
    this._ready = false;
    this._readyWaiters = [];
    this._onMessage = this._onMessage.bind(this);
  }

  CardElement.prototype.mount = function (target) {
    var container = typeof target === "string" ? document.querySelector(target) : target;
    if (!container) throw new Error("CheckoutSDK: nothing to mount the card form in: " + target);
    if (this._iframe) this.unmount();
    var params = new URLSearchParams({
      key: this._sdk._publicKey,
      origin: global.location.origin,
      frame: this._frameId,
      theme: this._theme,
      locale: this._locale,
    });
    var iframe = document.createElement("iframe");
    iframe.src = this._sdk._baseUrl + "/sdk/v1/card?" + params.toString();
    iframe.title = this._locale === "es" ? "Formulario de tarjeta seguro" : "Secure card form";
    iframe.setAttribute("allow", "payment");
    iframe.setAttribute("scrolling", "no");
    iframe.style.cssText = "border:0;width:100%;height:260px;display:block;overflow:hidden;";
    this._iframe = iframe;
    global.addEventListener("message", this._onMessage);
    container.appendChild(iframe);
    return this;
  };

  CardElement.prototype.unmount = function () {
    global.removeEventListener("message", this._onMessage);
    if (this._iframe && this._iframe.parentNode) this._iframe.parentNode.removeChild(this._iframe);
    this._iframe = null;
    this._ready = false;
    var pending = this._pending;
    this._pending = {};
    Object.keys(pending).forEach(function (id) {
      pending[id].reject(sdkError("AI1300", "The card form was removed."));
    });
  };

  CardElement.prototype.on = function (event, handler) {
    (this._handlers[event] = this._handlers[event] || []).push(handler);
    return this;
  };

  CardElement.prototype._emit = function (event, payload) {
    (this._handlers[event] || []).forEach(function (handler) {
      try { handler(payload); } catch (e) { setTimeout(function () { throw e; }); }
    });
  };

  // Only the iframe's own window, from the provider's origin, with a known message shape.
  CardElement.prototype._onMessage = function (event) {
    if (!this._iframe || event.source !== this._iframe.contentWindow) return;
    if (event.origin !== this._sdk._origin) return;
    var data = event.data;
    if (!data || typeof data !== "object" || data.source !== FRAME_SOURCE) return;
    if (data.frame !== this._frameId || typeof data.type !== "string") return;
    switch (data.type) {
      case "ready":
        this._ready = true;
        this._readyWaiters.splice(0).forEach(function (resolve) { resolve(); });
        this._emit("ready", {});
        break;
      case "resize":
        if (typeof data.height === "number" && data.height > 0 && data.height < 2000) {
          this._iframe.style.height = Math.ceil(data.height) + "px";
        }
        break;
      case "change":
        this._emit("change", {
          complete: data.complete === true,
          brand: typeof data.brand === "string" ? data.brand : null,
          bin: typeof data.bin === "string" && /^[0-9]{6}$/.test(data.bin) ? data.bin : null,
          error: typeof data.error === "string" ? data.error : null,
        });
        break;
      case "token":
      case "token_error":
        var request = this._pending[data.requestId];
        if (!request) return;
        delete this._pending[data.requestId];
        clearTimeout(request.timer);
        if (data.type === "token" && data.token && typeof data.token.id === "string") {
          request.resolve(data.token);
        } else {
          request.reject(sdkError(
            typeof data.code === "string" ? data.code : "AI1300",
            typeof data.message === "string" ? data.message : "Tokenization failed."
          ));
        }
        break;
    }
  };

  CardElement.prototype._whenReady = function () {
    var self = this;
    if (this._ready) return Promise.resolve();
    return new Promise(function (resolve) { self._readyWaiters.push(resolve); });
  };

  // Ask the iframe to check the form and create a single-use card token.
  CardElement.prototype.cardToken = function () {
    var self = this;
    if (!this._iframe) return Promise.reject(sdkError("AI1300", "The card form is not mounted."));
    return this._whenReady().then(function () {
      return new Promise(function (resolve, reject) {
        var requestId = randomId();
        var timer = setTimeout(function () {
          delete self._pending[requestId];
          reject(sdkError("AI1300", "The card form did not answer in time."));
        }, TIMEOUT_MS);
        self._pending[requestId] = { resolve: resolve, reject: reject, timer: timer };
        self._iframe.contentWindow.postMessage(
          { source: SDK_SOURCE, frame: self._frameId, type: "tokenize", requestId: requestId },
          self._sdk._origin
        );
      });
    });
  };

  function CheckoutSDK(publicKey, options) {
    if (!(this instanceof CheckoutSDK)) return new CheckoutSDK(publicKey, options);
    if (typeof publicKey !== "string" || !publicKey) {
      throw new Error("CheckoutSDK: a public API key is required.");
    }
    options = options || {};
    var base = options.baseUrl || (SCRIPT && SCRIPT.src ? originOf(SCRIPT.src) : global.location.origin);
    this._publicKey = publicKey;
    this._baseUrl = String(base).replace(/\/+$/, "");
    this._origin = originOf(this._baseUrl);
  }

  CheckoutSDK.prototype.element = function (type, options) {
    if (type !== "Card") throw new Error("CheckoutSDK: unknown element type " + type);
    return new CardElement(this, options);
  };

  // Prevention data for POST /payments: send session_id as device_finger_print_token.
  CheckoutSDK.prototype.preventionData = function () {
    return Promise.resolve({ session_id: pageSessionId(), user_agent: global.navigator.userAgent });
  };

  global.CheckoutSDK = CheckoutSDK;
})(window);
