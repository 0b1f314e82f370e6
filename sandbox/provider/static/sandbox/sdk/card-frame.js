// The card form inside the provider's iframe. It talks only to its parent window, at the
// origin the SDK passed when mounting, and answers it with tokens, never card data.
(function () {
  "use strict";

  var body = document.body;
  var config = {
    key: body.dataset.key,
    parentOrigin: body.dataset.parentOrigin,
    frame: body.dataset.frame,
    locale: body.dataset.locale === "es" ? "es" : "en",
  };
  var TEXT = {
    en: {
      number_required: "Enter the card number.",
      number_invalid: "This card number is not valid.",
      number_brand: "This card is not accepted. Use another card.",
      exp_invalid: "Enter the expiry date as MM/YY.",
      exp_past: "This card has expired.",
      cvv_invalid: "Enter the {n}-digit security code.",
      name_required: "Enter the name on the card.",
      cvv_back: "{n} digits on the back of the card",
      cvv_front: "{n} digits on the front of the card",
      CL2200: "Check the card details and try again.",
      CL2290: "This card is not accepted. Use another card.",
    },
    es: {
      number_required: "Escribe el número de la tarjeta.",
      number_invalid: "El número de tarjeta no es válido.",
      number_brand: "Esta tarjeta no se acepta. Usa otra tarjeta.",
      exp_invalid: "Escribe el vencimiento como MM/AA.",
      exp_past: "Esta tarjeta está vencida.",
      cvv_invalid: "Escribe el código de seguridad de {n} dígitos.",
      name_required: "Escribe el nombre como aparece en la tarjeta.",
      cvv_back: "{n} dígitos al reverso de la tarjeta",
      cvv_front: "{n} dígitos al frente de la tarjeta",
      CL2200: "Revisa los datos de la tarjeta e inténtalo de nuevo.",
      CL2290: "Esta tarjeta no se acepta. Usa otra tarjeta.",
    },
  }[config.locale];

  function t(key, n) {
    return TEXT[key].replace("{n}", n);
  }

  var fields = {
    number: document.getElementById("cc-number"),
    exp: document.getElementById("cc-exp"),
    cvv: document.getElementById("cc-csc"),
    name: document.getElementById("cc-name"),
  };
  var formError = document.getElementById("form-error");
  // Enter in a field must not navigate the frame; the merchant page decides when to pay.
  document.querySelector("form").addEventListener("submit", function (event) { event.preventDefault(); });
  var logo = document.getElementById("brand-logo");
  var cvvHint = document.getElementById("cc-csc-hint");
  var methods = [];
  var touched = {};
  var busy = false;

  function validParentOrigin(origin) {
    try {
      var url = new URL(origin);
      return (url.protocol === "http:" || url.protocol === "https:") && url.origin === origin;
    } catch (e) {
      return false;
    }
  }
  var canTalk = validParentOrigin(config.parentOrigin) && window.parent !== window;

  function post(message) {
    if (!canTalk) return;
    message.source = "checkout-card";
    message.frame = config.frame;
    window.parent.postMessage(message, config.parentOrigin);
  }

  function digits(value) {
    return value.replace(/\D/g, "");
  }

  function luhn(number) {
    var sum = 0;
    for (var i = 0; i < number.length; i++) {
      var d = +number[number.length - 1 - i];
      if (i % 2 === 1) { d *= 2; if (d > 9) d -= 9; }
      sum += d;
    }
    return number.length > 0 && sum % 10 === 0;
  }

  function rule(method, name) {
    for (var i = 0; i < (method.validations || []).length; i++) {
      if (method.validations[i].name === name) return method.validations[i].metadata || {};
    }
    return null;
  }

  // The catalogue entry whose BIN pattern takes the number (and whose exclusion does not).
  function detect(number) {
    for (var i = 0; i < methods.length; i++) {
      var bin = rule(methods[i], "bin");
      if (!bin || !number) continue;
      if (!new RegExp(bin.pattern).test(number)) continue;
      if (bin.exclusion_pattern && new RegExp(bin.exclusion_pattern).test(number)) continue;
      return methods[i];
    }
    return null;
  }

  function cardLength(method) {
    var r = method && rule(method, "card_number");
    return r ? r.length : 16;
  }

  function cvvRule(method) {
    var r = method && rule(method, "cvv");
    return { length: r ? r.length : 3, location: r ? r.card_location : "back" };
  }

  function groups(number, method) {
    var pattern = cardLength(method) === 15 ? [4, 6, 5] : [4, 4, 4, 4, 3];
    var out = [];
    var at = 0;
    for (var i = 0; i < pattern.length && at < number.length; i++) {
      out.push(number.slice(at, at + pattern[i]));
      at += pattern[i];
    }
    return out.join(" ");
  }

  function state() {
    var number = digits(fields.number.value);
    var method = detect(number);
    var cvv = cvvRule(method);
    var errors = {};
    if (!number) errors.number = t("number_required");
    else if (methods.length && number.length >= 6 && (!method || method.status !== "active")) errors.number = t("number_brand");
    else if (number.length !== cardLength(method) || !luhn(number)) errors.number = t("number_invalid");
    var exp = /^(\d{2})\s*\/\s*(\d{2})$/.exec(fields.exp.value.trim());
    if (!exp || +exp[1] < 1 || +exp[1] > 12) errors.exp = t("exp_invalid");
    else {
      var now = new Date();
      var year = 2000 + +exp[2];
      if (year < now.getFullYear() || (year === now.getFullYear() && +exp[1] < now.getMonth() + 1)) errors.exp = t("exp_past");
    }
    if (digits(fields.cvv.value).length !== cvv.length || /\D/.test(fields.cvv.value)) errors.cvv = t("cvv_invalid", cvv.length);
    if (!fields.name.value.trim()) errors.name = t("name_required");
    return { number: number, method: method, cvv: cvv, exp: exp, errors: errors };
  }

  function show(name, message) {
    var input = fields[name];
    var box = document.getElementById(input.id + "-error");
    box.textContent = message || "";
    input.setAttribute("aria-invalid", message ? "true" : "false");
  }

  function render(current, all) {
    Object.keys(fields).forEach(function (name) {
      if (all || touched[name]) show(name, current.errors[name]);
    });
    if (current.method) {
      logo.src = current.method.logo;
      logo.alt = current.method.name;
      logo.hidden = false;
    } else {
      logo.hidden = true;
      logo.removeAttribute("src");
      logo.alt = "";
    }
    cvvHint.textContent = t(current.cvv.location === "front" ? "cvv_front" : "cvv_back", current.cvv.length);
    fields.cvv.maxLength = current.cvv.length;
  }

  function emitChange(current, name) {
    var errorName = name && touched[name] ? name : Object.keys(current.errors).filter(function (n) { return touched[n]; })[0];
    post({
      type: "change",
      complete: Object.keys(current.errors).length === 0,
      brand: current.method ? current.method.id : null,
      bin: current.number.length >= 6 ? current.number.slice(0, 6) : null,
      error: errorName ? current.errors[errorName] || null : null,
    });
  }

  function onInput(name) {
    return function () {
      if (name === "number") {
        var number = digits(fields.number.value);
        var method = detect(number);
        fields.number.value = groups(number.slice(0, cardLength(method)), method);
      } else if (name === "exp") {
        var d = digits(fields.exp.value).slice(0, 4);
        fields.exp.value = d.length > 2 ? d.slice(0, 2) + "/" + d.slice(2) : d;
      } else if (name === "cvv") {
        fields.cvv.value = digits(fields.cvv.value);
      }
      formError.textContent = "";
      var current = state();
      render(current, false);
      emitChange(current, name);
    };
  }

  Object.keys(fields).forEach(function (name) {
    fields[name].addEventListener("input", onInput(name));
    fields[name].addEventListener("blur", function () {
      if (fields[name].value) touched[name] = true;
      var current = state();
      render(current, false);
      emitChange(current, name);
    });
  });

  function fail(requestId, code, message, shown) {
    if (shown) formError.textContent = message;
    post({ type: "token_error", requestId: requestId, code: code, message: message });
  }

  function markServerErrors(detail) {
    (detail || []).forEach(function (line) {
      var field = /^card\.(number|exp_month|exp_year|cvv|holder_name)/.exec(line);
      if (!field) return;
      var name = { number: "number", exp_month: "exp", exp_year: "exp", cvv: "cvv", holder_name: "name" }[field[1]];
      show(name, name === "cvv" ? t("cvv_invalid", state().cvv.length) : t(name === "number" ? "number_invalid" : name === "exp" ? "exp_invalid" : "name_required"));
    });
  }

  function tokenize(requestId) {
    if (busy) return fail(requestId, "AI1300", "A card token is already being created.", false);
    Object.keys(fields).forEach(function (name) { touched[name] = true; });
    var current = state();
    render(current, true);
    var names = Object.keys(current.errors);
    if (names.length) {
      fields[names[0]].focus();
      return fail(requestId, current.errors.number === t("number_brand") ? "CL2290" : "CL2200", current.errors[names[0]], false);
    }
    busy = true;
    body.setAttribute("aria-busy", "true");
    fetch("/card_tokens", {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: "Bearer " + config.key },
      body: JSON.stringify({ card: {
        number: current.number, exp_month: current.exp[1], exp_year: current.exp[2],
        cvv: fields.cvv.value, holder_name: fields.name.value.trim(),
      } }),
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (data) {
        if (response.status === 201 && data.id) {
          post({ type: "token", requestId: requestId, token: {
            id: data.id, card: data.card, payment_method_id: data.payment_method_id, expires_at: data.expires_at,
          } });
        } else if (data.error_code === "CL2200" || data.error_code === "CL2290") {
          if (data.error_code === "CL2200") markServerErrors(data.detail);
          fail(requestId, data.error_code, TEXT[data.error_code], true);
        } else {
          fail(requestId, "AI1300", "Tokenization failed (" + (data.error_code || response.status) + ").", false);
        }
      });
    }).catch(function () {
      fail(requestId, "AI1300", "The card service could not be reached.", false);
    }).then(function () {
      busy = false;
      body.removeAttribute("aria-busy");
    });
  }

  window.addEventListener("message", function (event) {
    if (!canTalk || event.source !== window.parent || event.origin !== config.parentOrigin) return;
    var data = event.data;
    if (!data || typeof data !== "object" || data.source !== "checkout-sdk" || data.frame !== config.frame) return;
    if (data.type === "tokenize" && typeof data.requestId === "string" && data.requestId.length <= 64) {
      tokenize(data.requestId);
    }
  });

  function reportSize() {
    post({ type: "resize", height: document.documentElement.scrollHeight });
  }
  if (window.ResizeObserver) new ResizeObserver(reportSize).observe(document.body);

  fetch("/payment_methods", { headers: { Authorization: "Bearer " + config.key } })
    .then(function (response) { return response.ok ? response.json() : []; })
    .then(function (list) {
      methods = (Array.isArray(list) ? list : []).filter(function (m) {
        return m.type === "credit_card" || m.type === "debit_card";
      });
    })
    .catch(function () { methods = []; })
    .then(function () {
      render(state(), false);
      post({ type: "ready" });
      reportSize();
    });
})();
