/* API keys in the browser (VRAMWISE_API_KEYS on): the page and its static files are served without a key;
   every call to the API carries `Authorization: Bearer <key>`. On a 401 the page asks the person for a key
   once, keeps it in this tab's sessionStorage (gone when the tab closes; never in localStorage or a cookie)
   and sends the call again. Loaded before app.js and coach.js: it wraps window.fetch for them. */
(() => {
  "use strict";
  const STORE_KEY = "vramwise.apiKey";
  const plainFetch = window.fetch.bind(window);
  let strings = null;

  async function text(name) {
    if (!strings) {
      try { strings = await (await plainFetch("/static/i18n.json")).json(); } catch { strings = {}; }
    }
    const lang = (localStorage.getItem("vramwise.lang") || navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
    return ((strings[lang] || {})[name]) || name;
  }

  function isApi(input) {
    const url = new URL(typeof input === "string" ? input : input.url, window.location.href);
    return url.origin === window.location.origin && url.pathname.startsWith("/v1/");
  }

  function withKey(init, key) {
    const headers = new Headers((init && init.headers) || {});
    if (key) headers.set("Authorization", `Bearer ${key}`);
    return { ...(init || {}), headers };
  }

  window.fetch = async (input, init) => {
    if (!isApi(input)) return plainFetch(input, init);
    const stored = sessionStorage.getItem(STORE_KEY);
    const first = await plainFetch(input, withKey(init, stored));
    if (first.status !== 401) return first;
    const key = window.prompt(await text(stored ? "api_key_refused" : "api_key_prompt"));
    if (!key || !key.trim()) return first;
    sessionStorage.setItem(STORE_KEY, key.trim());
    return plainFetch(input, withKey(init, key.trim()));
  };
})();
