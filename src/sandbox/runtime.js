// The host APIs of code mode's runtime, beside the engine's own built-ins
// (docs/internals/SANDBOX.md, "The runtime's APIs"): timers on the
// program's own clock, URL and URLSearchParams, TextEncoder and
// TextDecoder (UTF-8), structuredClone, crypto.randomUUID and
// getRandomValues, performance.now, en-US Intl (numbers, dates, collation)
// and the locale methods built on it, and the conversion of a program's
// return value to JSON. Our own code, compiled to bytecode at build time
// (scripts/stripper/jsbc.c) and run once in the zygote's context by
// src/sandbox/runtime.c, whose small host functions it is given:
//
//   host.now()             the program's clock, ms since it started
//                          (virtual in a replayable run: see advance)
//   host.advance(ms)       a replayable run's clock moves to ms
//   host.fill(buf, off, n) n seeded random bytes into an ArrayBuffer
//   host.encode(s)         s as UTF-8 (a Uint8Array; lone surrogates U+FFFD)
//   host.decode(buf, off, n, fatal)  UTF-8 bytes as a string (U+FFFD for
//                          what is not UTF-8, or a TypeError when fatal)
//
// It returns the hooks the worker calls: start, next, fire, result.
(function (host) {
	'use strict';
	// What the worker's own hooks use, taken before any program runs: a
	// program may replace a prototype's methods, and its return value and
	// timers still come out right.
	const uncurry = (f) => Function.prototype.call.bind(f);
	const { keys, defineProperty, freeze, getPrototypeOf } = Object;
	const isArray = Array.isArray;
	const isView = ArrayBuffer.isView;
	const mapEntries = uncurry(Map.prototype.entries);
	const setValues = uncurry(Set.prototype.values);
	const mapIterNext = uncurry(getPrototypeOf(new Map().entries()).next);
	const setIterNext = uncurry(getPrototypeOf(new Set().values()).next);
	const mapHas = uncurry(Map.prototype.has), mapGet = uncurry(Map.prototype.get);
	const mapSet = uncurry(Map.prototype.set), mapDelete = uncurry(Map.prototype.delete);
	const mapSize = uncurry(getOwnPropertyDescriptor(Map.prototype, 'size').get);
	const setSize = uncurry(getOwnPropertyDescriptor(Set.prototype, 'size').get);
	const dateValue = uncurry(Date.prototype.getTime);
	const dateISO = uncurry(Date.prototype.toISOString);
	const taLength = uncurry(getOwnPropertyDescriptor(getPrototypeOf(Uint8Array.prototype), 'length').get);
	const abLength = uncurry(getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength').get);
	const dvBuffer = uncurry(getOwnPropertyDescriptor(DataView.prototype, 'buffer').get);
	const dvOffset = uncurry(getOwnPropertyDescriptor(DataView.prototype, 'byteOffset').get);
	const dvLength = uncurry(getOwnPropertyDescriptor(DataView.prototype, 'byteLength').get);
	const regexpString = uncurry(RegExp.prototype.toString);
	const numberValue = uncurry(Number.prototype.valueOf);
	const stringValue = uncurry(String.prototype.valueOf);
	const booleanValue = uncurry(Boolean.prototype.valueOf);
	const bigintString = uncurry(BigInt.prototype.toString);
	const NumberC = Number, StringC = String, isSafe = Number.isSafeInteger;
	const MapC = Map, SetC = Set, DateC = Date, ErrorC = Error, PromiseC = Promise, RegExpC = RegExp;
	const DataViewC = DataView, ArrayBufferC = ArrayBuffer, Uint8C = Uint8Array;
	const TypeErrorC = TypeError, RangeErrorC = RangeError;
	function getOwnPropertyDescriptor(o, k) { return Object.getOwnPropertyDescriptor(o, k); }
	const isInstance = (v, C) => { try { return v instanceof C; } catch (e) { return false; } };
	const brand = (f, v) => { try { f(v); return true; } catch (e) { return false; } };

	const define = (o, name, value) =>
		defineProperty(o, name, { value, writable: true, enumerable: false, configurable: true });
	const global = globalThis;

	// ---- the clock and timers ------------------------------------------------------
	// The program's own clock, in ms since it started. Live, real time (less
	// the time a confirmation waited for a person); in a replayable run
	// (a fixed Date), virtual: it moves only when a timer fires, to that
	// timer's time, so a replay reads the very same times and never waits.
	// A timer due after the program's time limit is refused when it is set.
	const MAX_TIMERS = 1000;
	let limitMs = 30000, virtual = false;
	const timers = new MapC();
	let nextId = 1, seq = 0;
	const schedule = (what, cb, ms, args, every) => {
		if (typeof cb !== 'function')
			throw new TypeErrorC(`${what}: the callback must be a function (a string of code is not run)`);
		let d = NumberC(ms);
		if (!(d >= 0)) d = 0;
		if (every && d < 1) d = 1;
		if (mapSize(timers) >= MAX_TIMERS)
			throw new RangeErrorC(`${what}: too many pending timers (at most ${MAX_TIMERS}): ` +
				'clear them with clearTimeout, or await one batch before setting the next');
		const now = host.now(), due = now + d;
		if (due > limitMs)
			throw new RangeErrorC(`${what}: a timer ${d} ms from now would fire after the program's ` +
				`time limit of ${limitMs} ms (${Math.floor(now)} ms have passed)`);
		const id = nextId++;
		mapSet(timers, id, { due, seq: seq++, cb, args, every: every ? d : 0 });
		return id;
	};
	const cancel = (id) => { mapDelete(timers, NumberC(id)); };
	const earliest = () => {
		let best;
		for (const it = mapEntries(timers); ;) {
			const r = mapIterNext(it);
			if (r.done) break;
			const t = r.value[1];
			if (!best || t.due < best[1].due || (t.due === best[1].due && t.seq < best[1].seq)) best = r.value;
		}
		return best;
	};
	define(global, 'setTimeout', function setTimeout(cb, ms, ...args) { return schedule('setTimeout', cb, ms, args, false); });
	define(global, 'setInterval', function setInterval(cb, ms, ...args) { return schedule('setInterval', cb, ms, args, true); });
	define(global, 'clearTimeout', function clearTimeout(id) { cancel(id); });
	define(global, 'clearInterval', function clearInterval(id) { cancel(id); });
	define(global, 'queueMicrotask', function queueMicrotask(cb) {
		if (typeof cb !== 'function') throw new TypeErrorC('queueMicrotask: the callback must be a function');
		PromiseC.resolve().then(() => cb());
	});
	const performance = {};
	define(performance, 'now', function now() { return host.now(); });
	let origin = 0;
	defineProperty(performance, 'timeOrigin', { get() { return origin; }, enumerable: true });
	define(global, 'performance', freeze(performance));

	// ---- random values -------------------------------------------------------------
	// From the RUN frame's seed (the gateway's getrandom, or a replay's
	// recorded seed): HMAC-SHA-256 in counter mode, in C.
	const DOMExceptionC = global.DOMException;
	const hex = (b) => { let s = ''; for (let i = 0; i < b.length; i++) s += (b[i] < 16 ? '0' : '') + b[i].toString(16); return s; };
	const crypto = {};
	define(crypto, 'getRandomValues', function getRandomValues(a) {
		if (!isView(a) || isInstance(a, DataViewC) || isInstance(a, Float32Array) || isInstance(a, Float64Array))
			throw new DOMExceptionC('getRandomValues: the argument must be an integer typed array', 'TypeMismatchError');
		if (a.byteLength > 65536)
			throw new DOMExceptionC(`getRandomValues: ${a.byteLength} bytes asked for, at most 65536`, 'QuotaExceededError');
		host.fill(a.buffer, a.byteOffset, a.byteLength);
		return a;
	});
	define(crypto, 'randomUUID', function randomUUID() {
		const b = new Uint8C(16);
		host.fill(b.buffer, 0, 16);
		b[6] = (b[6] & 0x0f) | 0x40;
		b[8] = (b[8] & 0x3f) | 0x80;
		const h = hex(b);
		return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
	});
	define(global, 'crypto', freeze(crypto));

	// ---- UTF-8 -------------------------------------------------------------------------
	const bytesOf = (what, input) => {
		if (input === undefined) return [new ArrayBufferC(0), 0, 0];
		if (isInstance(input, ArrayBufferC)) return [input, 0, input.byteLength];
		if (isView(input)) return [input.buffer, input.byteOffset, input.byteLength];
		throw new TypeErrorC(`${what}: the input must be an ArrayBuffer or a typed array`);
	};
	class TextEncoder {
		get encoding() { return 'utf-8'; }
		encode(s = '') { return host.encode(StringC(s)); }
		encodeInto(s, dest) {
			if (!isInstance(dest, Uint8C)) throw new TypeErrorC('encodeInto: the destination must be a Uint8Array');
			s = StringC(s);
			let read = 0, written = 0;
			for (const ch of s) {
				const b = host.encode(ch);
				if (written + b.length > dest.length) break;
				dest.set(b, written);
				written += b.length;
				read += ch.length;
			}
			return { read, written };
		}
	}
	const UTF8_LABELS = ['utf-8', 'utf8', 'unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'x-unicode20utf8'];
	class TextDecoder {
		#fatal; #bom;
		constructor(label = 'utf-8', options = {}) {
			const l = StringC(label).trim().toLowerCase();
			if (!UTF8_LABELS.includes(l))
				throw new RangeErrorC(`TextDecoder: the encoding '${label}' is not supported here: only utf-8 is`);
			this.#fatal = !!options?.fatal;
			this.#bom = !!options?.ignoreBOM;
		}
		get encoding() { return 'utf-8'; }
		get fatal() { return this.#fatal; }
		get ignoreBOM() { return this.#bom; }
		decode(input, options) {
			if (options?.stream)
				throw new TypeErrorC('TextDecoder: streaming ({stream: true}) is not supported here: decode the whole input at once');
			const [buf, off, n] = bytesOf('TextDecoder.decode', input);
			const s = host.decode(buf, off, n, this.#fatal);
			return !this.#bom && s.charCodeAt(0) === 0xfeff ? s.slice(1) : s;
		}
	}
	define(global, 'TextEncoder', TextEncoder);
	define(global, 'TextDecoder', TextDecoder);

	// ---- URLSearchParams and URL (WHATWG URL, the common cases) ---------------------------
	const pct = (b) => '%' + (b < 16 ? '0' : '') + b.toString(16).toUpperCase();
	// Percent-encodes the UTF-8 of s, keeping the characters keep() accepts.
	const encodeSet = (s, keep) => {
		let out = '';
		for (const ch of s) {
			const c = ch.codePointAt(0);
			if (c < 0x80 && keep(ch, c)) { out += ch; continue; }
			const b = host.encode(ch);
			for (let i = 0; i < b.length; i++) out += pct(b[i]);
		}
		return out;
	};
	const decodePct = (s) => {
		if (!s.includes('%')) return s;
		const bytes = [];
		for (let i = 0; i < s.length; i++) {
			const c = s.charCodeAt(i);
			if (c === 0x25 && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) {
				bytes.push(parseInt(s.slice(i + 1, i + 3), 16));
				i += 2;
			} else {
				const b = host.encode(s[i]);
				for (let j = 0; j < b.length; j++) bytes.push(b[j]);
			}
		}
		const u = new Uint8C(bytes);
		return host.decode(u.buffer, 0, u.length, false);
	};
	const formKeep = (ch) => /[A-Za-z0-9*\-._]/.test(ch);
	const formEncode = (s) => encodeSet(s, formKeep).replace(/%20/g, '+');
	const formDecode = (s) => decodePct(s.replace(/\+/g, ' '));
	const parseForm = (s) => {
		const list = [];
		for (const part of s.split('&')) {
			if (part === '') continue;
			const i = part.indexOf('=');
			list.push(i < 0 ? [formDecode(part), ''] : [formDecode(part.slice(0, i)), formDecode(part.slice(i + 1))]);
		}
		return list;
	};
	class URLSearchParams {
		#list = [];
		#url = null;
		constructor(init = '') {
			if (typeof init === 'object' && init !== null) {
				if (typeof init[Symbol.iterator] === 'function') {
					for (const pair of init) {
						const p = [...pair];
						if (p.length !== 2) throw new TypeErrorC('URLSearchParams: each pair must have exactly two items');
						this.#list.push([StringC(p[0]), StringC(p[1])]);
					}
				} else {
					for (const k of keys(init)) this.#list.push([k, StringC(init[k])]);
				}
			} else {
				const s = StringC(init);
				this.#list = parseForm(s.startsWith('?') ? s.slice(1) : s);
			}
		}
		static _link(p, url, query) { p.#url = url; p.#list = parseForm(query); }
		#update() { if (this.#url) this.#url._setQuery(this.toString()); }
		get size() { return this.#list.length; }
		append(k, v) { this.#list.push([StringC(k), StringC(v)]); this.#update(); }
		delete(k, v) {
			k = StringC(k);
			this.#list = this.#list.filter(([a, b]) => a !== k || (v !== undefined && b !== StringC(v)));
			this.#update();
		}
		get(k) { k = StringC(k); const e = this.#list.find(([a]) => a === k); return e ? e[1] : null; }
		getAll(k) { k = StringC(k); return this.#list.filter(([a]) => a === k).map(([, b]) => b); }
		has(k, v) { k = StringC(k); return this.#list.some(([a, b]) => a === k && (v === undefined || b === StringC(v))); }
		set(k, v) {
			k = StringC(k); v = StringC(v);
			const i = this.#list.findIndex(([a]) => a === k);
			if (i < 0) this.#list.push([k, v]);
			else this.#list = this.#list.filter(([a], j) => a !== k || j === i).map((e, j) => (e[0] === k ? [k, v] : e));
			this.#update();
		}
		sort() {
			this.#list = this.#list.map((e, i) => [e, i]).sort((x, y) => {
				const a = x[0][0], b = y[0][0];
				for (let i = 0; i < a.length && i < b.length; i++)
					if (a.charCodeAt(i) !== b.charCodeAt(i)) return a.charCodeAt(i) - b.charCodeAt(i);
				return a.length - b.length || x[1] - y[1];
			}).map(([e]) => e);
			this.#update();
		}
		forEach(fn, self) { for (const [k, v] of this.#list) fn.call(self, v, k, this); }
		*entries() { for (const [k, v] of this.#list) yield [k, v]; }
		*keys() { for (const [k] of this.#list) yield k; }
		*values() { for (const [, v] of this.#list) yield v; }
		[Symbol.iterator]() { return this.entries(); }
		toString() { return this.#list.map(([k, v]) => formEncode(k) + '=' + formEncode(v)).join('&'); }
		get [Symbol.toStringTag]() { return 'URLSearchParams'; }
	}

	const SPECIAL = { 'http:': '80', 'https:': '443', 'ws:': '80', 'wss:': '443', 'ftp:': '21', 'file:': '' };
	const C0 = (c) => c <= 0x20 || c === 0x7f;
	const keepFragment = (ch, c) => !C0(c) && !'"<>`'.includes(ch);
	const keepQuery = (special) => (ch, c) => !C0(c) && !'"#<>'.includes(ch) && !(special && ch === "'");
	const keepPath = (ch, c) => !C0(c) && !'"#<>?`{}'.includes(ch);
	const keepUser = (ch, c) => keepPath(ch, c) && !'/:;=@[\\]^|'.includes(ch);
	const invalid = (input, why) => new TypeErrorC(`Invalid URL: '${input}'${why ? ': ' + why : ''}`);
	const normPath = (segs, special) => {
		const out = [];
		for (let i = 0; i < segs.length; i++) {
			const s = segs[i], last = i === segs.length - 1;
			const l = s.toLowerCase();
			if (s === '..' || l === '.%2e' || l === '%2e.' || l === '%2e%2e') {
				out.pop();
				if (last) out.push('');
			} else if (s === '.' || l === '%2e') {
				if (last) out.push('');
			} else {
				out.push(encodeSet(s, keepPath));
			}
		}
		void special;
		return '/' + out.join('/');
	};
	const parseHost = (input, h, special) => {
		if (h.startsWith('[')) {
			if (!/^\[[0-9A-Fa-f:.]+\]$/.test(h)) throw invalid(input, 'a malformed IPv6 address');
			return h.toLowerCase();
		}
		if (!special) return encodeSet(h, (ch, c) => !C0(c));
		const d = decodePct(h).toLowerCase();
		if (/[^\x00-\x7f]/.test(d))
			throw invalid(input, 'host names with non-ASCII characters are not supported here (send the punycode form, xn--...)');
		if (d === '' || /[\x00-\x20#%/:<>?@[\\\]^|]/.test(d)) throw invalid(input, 'a malformed host');
		if (/^[0-9.]+$/.test(d) && /\d$/.test(d)) {
			const parts = d.split('.');
			if (parts.length !== 4 || parts.some((p) => p === '' || +p > 255))
				throw invalid(input, 'a malformed IPv4 address');
			return parts.map((p) => StringC(+p)).join('.');
		}
		return d;
	};
	// -> {protocol, username, password, hostname, port, pathname, search, hash}
	const parseURL = (input, base) => {
		let s = StringC(input).replace(/^[\x00-\x20]+|[\x00-\x20]+$/g, '').replace(/[\t\n\r]/g, '');
		const m = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(s);
		let u;
		if (m) {
			u = { protocol: m[1].toLowerCase() + ':', username: '', password: '', hostname: '', port: '', pathname: '', search: undefined, hash: undefined };
			s = s.slice(m[0].length);
			if (base && base.protocol === u.protocol && u.protocol in SPECIAL && !/^[/\\]/.test(s))
				return parseRelative(input, s, base);
		} else {
			if (!base) throw invalid(input, 'a relative URL needs a base (new URL(path, base))');
			return parseRelative(input, s, base);
		}
		const special = u.protocol in SPECIAL;
		if (special) s = s.replace(/\\/g, '/');
		let rest = s;
		const hi = rest.indexOf('#');
		if (hi >= 0) { u.hash = rest.slice(hi + 1); rest = rest.slice(0, hi); }
		const qi = rest.indexOf('?');
		if (qi >= 0) { u.search = rest.slice(qi + 1); rest = rest.slice(0, qi); }
		if (special || rest.startsWith('//')) {
			if (special && u.protocol !== 'file:') rest = rest.replace(/^\/*/, '//');
			if (rest.startsWith('//')) {
				rest = rest.slice(2);
				const pi = rest.search(/[/]/);
				const auth = pi < 0 ? rest : rest.slice(0, pi);
				rest = pi < 0 ? '' : rest.slice(pi);
				if (auth !== '' || u.protocol !== 'file:') authority(input, u, auth, special);
			}
			u.pathname = special || rest !== '' ? normPath((rest.startsWith('/') ? rest.slice(1) : rest).split('/'), special) : '';
			if (special && u.protocol !== 'file:' && u.hostname === '') throw invalid(input, 'no host');
		} else if (rest.startsWith('/')) {
			u.pathname = normPath(rest.slice(1).split('/'), false);
		} else {
			u.pathname = encodeSet(rest, (ch, c) => !C0(c) || ch === ' ');
			u.opaque = true;
		}
		return finishURL(u);
	};
	const authority = (input, u, auth, special) => {
		const at = auth.lastIndexOf('@');
		if (at >= 0) {
			const cred = auth.slice(0, at);
			auth = auth.slice(at + 1);
			const ci = cred.indexOf(':');
			u.username = encodeSet(ci < 0 ? cred : cred.slice(0, ci), keepUser);
			u.password = ci < 0 ? '' : encodeSet(cred.slice(ci + 1), keepUser);
		}
		const pm = /:(\d*)$/.exec(auth);
		let host = auth;
		if (pm && !auth.endsWith(']')) {
			host = auth.slice(0, pm.index);
			if (pm[1] !== '') {
				const p = parseInt(pm[1], 10);
				if (p > 65535) throw invalid(input, 'the port is over 65535');
				u.port = StringC(p);
			}
		} else if (/:[^\]]*$/.test(auth) && !auth.endsWith(']')) {
			throw invalid(input, 'a malformed port');
		}
		u.hostname = parseHost(input, host, special);
		if (SPECIAL[u.protocol] === u.port) u.port = '';
	};
	const parseRelative = (input, s, base) => {
		const u = { ...base, search: undefined, hash: undefined };
		delete u.href;
		const special = u.protocol in SPECIAL;
		if (special) s = s.replace(/\\/g, '/');
		if (base.opaque && !s.startsWith('#')) throw invalid(input, `it is relative to '${base.href}', which cannot be a base`);
		if (s.startsWith('//')) return parseURL(u.protocol + s);
		let rest = s;
		const hi = rest.indexOf('#');
		if (hi >= 0) { u.hash = rest.slice(hi + 1); rest = rest.slice(0, hi); }
		const qi = rest.indexOf('?');
		if (qi >= 0) { u.search = rest.slice(qi + 1); rest = rest.slice(0, qi); }
		if (rest === '') {
			if (qi < 0) u.search = base.search === '' ? undefined : base.search.slice(1);
		} else if (rest.startsWith('/')) {
			u.pathname = normPath(rest.slice(1).split('/'), special);
		} else {
			const dir = base.pathname.slice(0, base.pathname.lastIndexOf('/') + 1);
			u.pathname = normPath((dir + rest).slice(1).split('/'), special);
		}
		return finishURL(u);
	};
	const finishURL = (u) => {
		const special = u.protocol in SPECIAL;
		// Absent is '', present and empty '?' (kept in href, '' from the getter).
		u.search = u.search === undefined ? '' : '?' + encodeSet(u.search, keepQuery(special));
		u.hash = u.hash === undefined ? '' : '#' + encodeSet(u.hash, keepFragment);
		return u;
	};
	const hrefOf = (u) => {
		let s = u.protocol;
		if (u.hostname !== '' || u.protocol === 'file:' || (!u.opaque && u.pathname.startsWith('//'))) {
			s += '//';
			if (u.username !== '' || u.password !== '') s += u.username + (u.password !== '' ? ':' + u.password : '') + '@';
			s += u.hostname + (u.port !== '' ? ':' + u.port : '');
		}
		return s + u.pathname + u.search + u.hash;
	};
	class URL {
		#u; #params;
		constructor(url, base) {
			const b = base === undefined ? undefined : parseURL(isInstance(base, URL) ? base.href : base);
			if (b) b.href = hrefOf(b);
			this.#u = parseURL(isInstance(url, URL) ? url.href : url, b);
			this.#params = new URLSearchParams();
			URLSearchParams._link(this.#params, this, this.#u.search.slice(1));
		}
		static canParse(url, base) { try { new URL(url, base); return true; } catch (e) { return false; } }
		static parse(url, base) { try { return new URL(url, base); } catch (e) { return null; } }
		_setQuery(q) { this.#u.search = q === '' ? '' : '?' + q; }
		#reparse(href) {
			this.#u = parseURL(href);
			URLSearchParams._link(this.#params, this, this.#u.search.slice(1));
		}
		get href() { return hrefOf(this.#u); }
		set href(v) { this.#reparse(v); }
		get origin() {
			const u = this.#u;
			return u.protocol in SPECIAL && u.protocol !== 'file:' ? u.protocol + '//' + this.host : 'null';
		}
		get protocol() { return this.#u.protocol; }
		set protocol(v) {
			const p = StringC(v).replace(/:.*$/, '').toLowerCase() + ':';
			if ((p in SPECIAL) === (this.#u.protocol in SPECIAL) && /^[a-z][a-z0-9+.-]*:$/.test(p)) {
				this.#u.protocol = p;
				if (SPECIAL[p] === this.#u.port) this.#u.port = '';
			}
		}
		get username() { return this.#u.username; }
		set username(v) { if (this.#u.hostname) this.#u.username = encodeSet(StringC(v), keepUser); }
		get password() { return this.#u.password; }
		set password(v) { if (this.#u.hostname) this.#u.password = encodeSet(StringC(v), keepUser); }
		get host() { return this.#u.hostname + (this.#u.port !== '' ? ':' + this.#u.port : ''); }
		set host(v) { if (!this.#u.opaque) this.#reparse(this.#u.protocol + '//' + this.#cred() + StringC(v) + this.#tail()); }
		get hostname() { return this.#u.hostname; }
		set hostname(v) { if (!this.#u.opaque) this.#reparse(this.#u.protocol + '//' + this.#cred() + StringC(v).replace(/:.*$/, '') + (this.#u.port ? ':' + this.#u.port : '') + this.#tail()); }
		get port() { return this.#u.port; }
		set port(v) {
			const s = StringC(v);
			if (s === '') { this.#u.port = ''; return; }
			const m = /^\d+/.exec(s);
			if (m && +m[0] <= 65535) this.#u.port = SPECIAL[this.#u.protocol] === StringC(+m[0]) ? '' : StringC(+m[0]);
		}
		get pathname() { return this.#u.pathname; }
		set pathname(v) {
			if (this.#u.opaque) return;
			const s = StringC(v);
			this.#u.pathname = normPath((s.startsWith('/') ? s.slice(1) : s).split(this.#u.protocol in SPECIAL ? /[/\\]/ : '/'), true);
		}
		get search() { return this.#u.search.length > 1 ? this.#u.search : ''; }
		set search(v) {
			const s = StringC(v).replace(/^\?/, '');
			this.#u.search = s === '' ? '' : '?' + encodeSet(s, keepQuery(this.#u.protocol in SPECIAL));
			URLSearchParams._link(this.#params, this, this.#u.search.slice(1));
		}
		get searchParams() { return this.#params; }
		get hash() { return this.#u.hash.length > 1 ? this.#u.hash : ''; }
		set hash(v) { const s = StringC(v).replace(/^#/, ''); this.#u.hash = s === '' ? '' : '#' + encodeSet(s, keepFragment); }
		#cred() { const u = this.#u; return u.username || u.password ? u.username + (u.password ? ':' + u.password : '') + '@' : ''; }
		#tail() { return this.#u.pathname + this.#u.search + this.#u.hash; }
		toString() { return this.href; }
		toJSON() { return this.href; }
		get [Symbol.toStringTag]() { return 'URL'; }
	}
	define(global, 'URL', URL);
	define(global, 'URLSearchParams', URLSearchParams);

	// ---- structuredClone -----------------------------------------------------------------
	const cloneError = (what) => new DOMExceptionC(`structuredClone: ${what} could not be cloned`, 'DataCloneError');
	const TYPED = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array,
		Float32Array, Float64Array, BigInt64Array, BigUint64Array];
	if (typeof Float16Array === 'function') TYPED.push(Float16Array);
	const ERRORS = { Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError };
	define(global, 'structuredClone', function structuredClone(value, options) {
		if (options?.transfer?.length) throw cloneError('a transfer list (transfer is not supported here)');
		const memo = new MapC();
		const clone = (v) => {
			if (typeof v === 'function') throw cloneError(`the function ${v.name || '(anonymous)'}`);
			if (typeof v === 'symbol') throw cloneError(StringC(v));
			if (typeof v !== 'object' || v === null) return v;
			if (mapHas(memo, v)) return mapGet(memo, v);
			let out;
			if (isArray(v)) {
				out = new Array(v.length);
				mapSet(memo, v, out);
				for (const k of keys(v)) out[k] = clone(v[k]);
				return out;
			}
			if (brand(dateValue, v)) { out = new DateC(dateValue(v)); mapSet(memo, v, out); return out; }
			if (isInstance(v, RegExpC)) { out = new RegExpC(v.source, v.flags); mapSet(memo, v, out); return out; }
			if (brand(mapSize, v)) {
				out = new MapC(); mapSet(memo, v, out);
				for (const it = mapEntries(v); ;) { const r = mapIterNext(it); if (r.done) break; out.set(clone(r.value[0]), clone(r.value[1])); }
				return out;
			}
			if (brand(setSize, v)) {
				out = new SetC(); mapSet(memo, v, out);
				for (const it = setValues(v); ;) { const r = setIterNext(it); if (r.done) break; out.add(clone(r.value)); }
				return out;
			}
			if (brand(abLength, v)) { out = v.slice(0); mapSet(memo, v, out); return out; }
			if (isView(v)) {
				const buf = clone(v.buffer);
				if (brand(dvLength, v)) out = new DataViewC(buf, dvOffset(v), dvLength(v));
				else { const C = TYPED.find((T) => isInstance(v, T)); out = new C(buf, v.byteOffset, v.length); }
				mapSet(memo, v, out);
				return out;
			}
			if (brand(numberValue, v)) return new NumberC(numberValue(v));
			if (brand(stringValue, v)) return new StringC(stringValue(v));
			if (brand(booleanValue, v)) return new Boolean(booleanValue(v));
			if (isInstance(v, ErrorC)) {
				const C = ERRORS[v.name] || ErrorC;
				out = new C(v.message);
				mapSet(memo, v, out);
				if (typeof v.stack === 'string') define(out, 'stack', v.stack);
				if ('cause' in v) define(out, 'cause', clone(v.cause));
				return out;
			}
			if (isInstance(v, PromiseC) || isInstance(v, WeakMap) || isInstance(v, WeakSet) || isInstance(v, WeakRef))
				throw cloneError(`a ${getPrototypeOf(v)?.constructor?.name ?? 'value'}`);
			out = {};
			mapSet(memo, v, out);
			for (const k of keys(v)) out[k] = clone(v[k]);
			return out;
		};
		return clone(value);
	});

	// ---- Intl, en-US ---------------------------------------------------------------------
	// Correct for en-US and the options below; any other locale, or an
	// option value not implemented, is a RangeError naming it: a report
	// formatted for people never comes out silently unformatted.
	const unsupported = (what) => new RangeErrorC(`Intl: ${what} is not supported in this sandbox (its formatting is en-US only)`);
	const checkLocale = (locales) => {
		const list = locales === undefined ? [] : isArray(locales) ? locales : [locales];
		for (const l of list) {
			const s = StringC(l);
			if (!/^en(-US)?(-u-[a-z0-9-]+)?$/i.test(s)) throw unsupported(`the locale '${s}'`);
		}
		return 'en-US';
	};
	const pick = (o, name, allowed, def) => {
		const v = o?.[name];
		if (v === undefined) return def;
		const s = typeof allowed[0] === 'boolean' ? !!v : StringC(v);
		if (!allowed.includes(s)) throw unsupported(`${name}: '${StringC(v)}'`);
		return s;
	};
	const digitsOpt = (o, name, lo, hi, def) => {
		const v = o?.[name];
		if (v === undefined) return def;
		const n = NumberC(v);
		if (!(n >= lo && n <= hi) || Math.floor(n) !== n) throw new RangeErrorC(`${name} value is out of range (${lo} to ${hi})`);
		return n;
	};
	const refuseKeys = (o, list) => {
		for (const k of list) if (o?.[k] !== undefined) throw unsupported(`the option ${k}`);
	};

	// A finite number or BigInt as its exact decimal digits: {neg, digits, exp}
	// meaning 0.digits * 10^exp (String() gives the shortest round-trip form,
	// which is what ICU formats, so 1.005 rounds to 1.01 as elsewhere).
	const decimal = (x) => {
		let s = typeof x === 'bigint' ? bigintString(x) : StringC(x);
		const neg = s[0] === '-' || Object.is(x, -0);
		if (s[0] === '-') s = s.slice(1);
		let e = 0;
		const ei = s.search(/e/i);
		if (ei >= 0) { e = parseInt(s.slice(ei + 1), 10); s = s.slice(0, ei); }
		const di = s.indexOf('.');
		let int = di < 0 ? s : s.slice(0, di), frac = di < 0 ? '' : s.slice(di + 1);
		let digits = (int + frac).replace(/^0+/, '');
		const lead = (int + frac).length - digits.length;
		let exp = int.length + e - lead;
		digits = digits.replace(/0+$/, '');
		if (digits === '') { exp = 0; }
		return { neg, digits, exp };
	};
	// Rounds half away from zero to `frac` fraction digits (or `sig`
	// significant digits); returns [integer part, fraction part].
	const roundTo = (d, frac, sig) => {
		let { digits, exp } = d;
		let keep = sig !== undefined ? sig : exp + frac;
		if (keep < 0) { digits = ''; exp = 0; keep = 0; }
		if (digits.length > keep) {
			const up = digits.charCodeAt(keep) >= 53;
			digits = digits.slice(0, keep);
			if (up) {
				let i = digits.length - 1;
				let a = digits.split('');
				while (i >= 0 && a[i] === '9') { a[i] = '0'; i--; }
				if (i < 0) { a.unshift('1'); exp++; } else a[i] = StringC.fromCharCode(a[i].charCodeAt(0) + 1);
				digits = a.join('');
			}
			digits = digits.replace(/0+$/, '');
			if (digits === '') exp = 0;
		}
		const int = exp > 0 ? (digits.slice(0, exp) + '0'.repeat(Math.max(0, exp - digits.length))) : '0';
		const fr = exp >= 0 ? digits.slice(exp) : '0'.repeat(-exp) + digits;
		return [int.replace(/^0+(?=\d)/, ''), fr];
	};
	const group = (int) => int.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
	const CURRENCY = { USD: '$', EUR: '€', GBP: '£', JPY: '¥', CAD: 'CA$', AUD: 'A$', INR: '₹', CNY: 'CN¥',
		MXN: 'MX$', BRL: 'R$', KRW: '₩', ILS: '₪', NZD: 'NZ$', HKD: 'HK$', TWD: 'NT$', VND: '₫', PHP: '₱', XAF: 'FCFA' };
	const NARROW = { CAD: '$', AUD: '$', MXN: '$', NZD: '$', HKD: '$', TWD: '$', CNY: '¥' };
	const CURRENCY_DIGITS = { JPY: 0, KRW: 0, VND: 0, CLP: 0, ISK: 0, HUF: 2, BHD: 3, KWD: 3, JOD: 3, OMR: 3, TND: 3 };
	const COMPACT = [[12, 'T'], [9, 'B'], [6, 'M'], [3, 'K']];
	class NumberFormat {
		#o;
		constructor(locales, options) {
			const o = options === undefined ? {} : Object(options);
			const locale = checkLocale(locales);
			refuseKeys(o, ['unit', 'unitDisplay', 'roundingIncrement', 'roundingPriority']);
			const style = pick(o, 'style', ['decimal', 'percent', 'currency'], 'decimal');
			const notation = pick(o, 'notation', ['standard', 'compact'], 'standard');
			pick(o, 'compactDisplay', ['short'], 'short');
			pick(o, 'numberingSystem', ['latn'], 'latn');
			pick(o, 'roundingMode', ['halfExpand'], 'halfExpand');
			pick(o, 'trailingZeroDisplay', ['auto', 'stripIfInteger'], 'auto');
			let currency;
			if (style === 'currency') {
				if (o.currency === undefined) throw new TypeErrorC('Currency code is required with currency style.');
				currency = StringC(o.currency).toUpperCase();
				if (!/^[A-Z]{3}$/.test(currency)) throw new RangeErrorC(`Invalid currency code : ${o.currency}`);
			}
			const display = pick(o, 'currencyDisplay', ['symbol', 'narrowSymbol', 'code'], 'symbol');
			const sign = pick(o, 'currencySign', ['standard', 'accounting'], 'standard');
			const cd = style === 'currency' ? (CURRENCY_DIGITS[currency] ?? 2) : 0;
			const minF0 = style === 'currency' ? cd : 0, maxF0 = style === 'currency' ? cd : style === 'percent' ? 0 : 3;
			let minF = digitsOpt(o, 'minimumFractionDigits', 0, 100, undefined);
			let maxF = digitsOpt(o, 'maximumFractionDigits', 0, 100, undefined);
			if (minF === undefined) minF = Math.min(minF0, maxF ?? minF0);
			if (maxF === undefined) maxF = Math.max(maxF0, minF);
			if (minF > maxF) throw new RangeErrorC('maximumFractionDigits value is out of range.');
			const minS = digitsOpt(o, 'minimumSignificantDigits', 1, 21, undefined);
			const maxS = digitsOpt(o, 'maximumSignificantDigits', 1, 21, undefined);
			const ug = o.useGrouping;
			const grouping = ug === undefined ? (notation === 'compact' ? 'min2' : 'auto') : ug === false || ug === 'false' ? false : StringC(ug) === 'min2' ? 'min2' : 'auto';
			this.#o = {
				locale, style, notation, currency, display, sign, minF, maxF, grouping,
				minI: digitsOpt(o, 'minimumIntegerDigits', 1, 21, 1),
				minS: minS ?? (maxS !== undefined ? 1 : undefined), maxS: maxS ?? (minS !== undefined ? 21 : undefined),
				signDisplay: pick(o, 'signDisplay', ['auto', 'always', 'never', 'exceptZero', 'negative'], 'auto'),
				strip: o.trailingZeroDisplay === 'stripIfInteger',
				fracSet: o.minimumFractionDigits !== undefined || o.maximumFractionDigits !== undefined,
			};
		}
		get format() {
			const f = (x) => this.#format(x);
			define(this, 'format', f);
			return f;
		}
		#format(x) {
			const o = this.#o;
			if (typeof x !== 'bigint') x = NumberC(x);
			let body, neg, zero;
			if (typeof x === 'number' && !isFinite(x)) {
				neg = x < 0; zero = false;
				body = x !== x ? 'NaN' : '∞';
			} else {
				let d = decimal(x);
				neg = d.neg;
				if (o.style === 'percent') d = { ...d, exp: d.digits === '' ? 0 : d.exp + 2 };
				let suffix = '';
				if (o.notation === 'compact') {
					for (const [p, s] of COMPACT) {
						if (d.digits !== '' && d.exp > p) { d = { ...d, exp: d.exp - p }; suffix = s; break; }
					}
				}
				let int, frac;
				if (o.minS !== undefined) {
					[int, frac] = roundTo(d, 0, o.maxS);
					const have = (int === '0' ? '' : int).length + frac.length - (int === '0' ? frac.replace(/[^0].*$/, '').length : 0);
					if (have < o.minS) frac += '0'.repeat(o.minS - have);
				} else if (o.notation === 'compact' && !o.fracSet) {
					[int, frac] = roundTo(d, 0, Math.max(2, d.exp));
					if (int.length > 3 && suffix !== 'T') {
						const i = COMPACT.findIndex(([, s]) => s === suffix);
						if (i > 0) { suffix = COMPACT[i - 1][1]; int = '1'; frac = ''; }
					}
				} else {
					[int, frac] = roundTo(d, o.maxF, undefined);
					if (frac.length < o.minF) frac += '0'.repeat(o.minF - frac.length);
				}
				if (o.strip && /^0*$/.test(frac)) frac = '';
				zero = /^0*$/.test(int) && /^0*$/.test(frac);
				if (int.length < o.minI) int = '0'.repeat(o.minI - int.length) + int;
				const grouped = o.grouping === false || (o.grouping === 'min2' && int.length < 5) ? int : group(int);
				body = grouped + (frac ? '.' + frac : '') + suffix;
			}
			if (o.style === 'percent') body += '%';
			let cur = '';
			if (o.style === 'currency') {
				const c = o.currency;
				cur = o.display === 'code' ? c + '\u00a0' : o.display === 'narrowSymbol' ? (NARROW[c] ?? CURRENCY[c] ?? c + '\u00a0') : (CURRENCY[c] ?? c + '\u00a0');
			}
			let signStr = '';
			const sd = o.signDisplay;
			if (neg && !(sd === 'never') && !(zero && (sd === 'exceptZero' || sd === 'negative'))) signStr = '-';
			else if (!neg && (sd === 'always' || (sd === 'exceptZero' && !zero && body !== 'NaN'))) signStr = '+';
			if (o.sign === 'accounting' && signStr === '-') return '(' + cur + body + ')';
			return signStr + cur + body;
		}
		formatToParts() { throw unsupported('formatToParts'); }
		resolvedOptions() {
			const o = this.#o;
			const r = { locale: o.locale, numberingSystem: 'latn', style: o.style, minimumIntegerDigits: o.minI,
				minimumFractionDigits: o.minF, maximumFractionDigits: o.maxF, useGrouping: o.grouping, notation: o.notation,
				signDisplay: o.signDisplay, roundingMode: 'halfExpand' };
			if (o.currency) { r.currency = o.currency; r.currencyDisplay = o.display; r.currencySign = o.sign; }
			if (o.minS !== undefined) { r.minimumSignificantDigits = o.minS; r.maximumSignificantDigits = o.maxS; }
			return r;
		}
		static supportedLocalesOf(l) { try { checkLocale(l); return ['en-US']; } catch (e) { return []; } }
	}

	const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
	const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
	const DATE_KEYS = ['weekday', 'year', 'month', 'day'];
	const TIME_KEYS = ['hour', 'minute', 'second', 'fractionalSecondDigits', 'dayPeriod'];
	const pad2 = (n) => (n < 10 ? '0' : '') + n;
	// required: 'date', 'time' or 'any'; defaults: 'date', 'time' or 'all' (ECMA-402's ToDateTimeOptions).
	class DateTimeFormat {
		#o;
		constructor(locales, options, required = 'any', defaults = 'date') {
			const o = options === undefined ? {} : Object(options);
			checkLocale(locales);
			refuseKeys(o, ['era', 'dayPeriod']);
			pick(o, 'calendar', ['gregory'], 'gregory');
			pick(o, 'numberingSystem', ['latn'], 'latn');
			const tz = o.timeZone === undefined ? undefined : StringC(o.timeZone);
			if (tz !== undefined && !/^(utc|etc\/utc|gmt|etc\/gmt|z|zulu|universal)$/i.test(tz))
				throw unsupported(`the time zone '${tz}' (no time zone data: only UTC, or the sandbox's local time when timeZone is left out)`);
			const r = {
				utc: tz !== undefined,
				weekday: pick(o, 'weekday', ['long', 'short', 'narrow'], undefined),
				year: pick(o, 'year', ['numeric', '2-digit'], undefined),
				month: pick(o, 'month', ['numeric', '2-digit', 'long', 'short', 'narrow'], undefined),
				day: pick(o, 'day', ['numeric', '2-digit'], undefined),
				hour: pick(o, 'hour', ['numeric', '2-digit'], undefined),
				minute: pick(o, 'minute', ['numeric', '2-digit'], undefined),
				second: pick(o, 'second', ['numeric', '2-digit'], undefined),
				frac: digitsOpt(o, 'fractionalSecondDigits', 1, 3, undefined),
				tzName: pick(o, 'timeZoneName', ['short', 'long'], undefined),
				dateStyle: pick(o, 'dateStyle', ['full', 'long', 'medium', 'short'], undefined),
				timeStyle: pick(o, 'timeStyle', ['full', 'long', 'medium', 'short'], undefined),
			};
			const cycle = pick(o, 'hourCycle', ['h11', 'h12', 'h23', 'h24'], undefined);
			r.h12 = o.hour12 !== undefined ? !!o.hour12 : cycle ? cycle === 'h11' || cycle === 'h12' : true;
			const styled = r.dateStyle || r.timeStyle;
			const fields = [...DATE_KEYS, 'hour', 'minute', 'second', 'frac', 'tzName'].filter((k) => r[k] !== undefined);
			if (styled && fields.some((k) => k !== 'tzName'))
				throw new TypeErrorC(`Intl.DateTimeFormat: dateStyle and timeStyle cannot be combined with ${fields[0]}`);
			if (!styled) {
				const hasDate = DATE_KEYS.some((k) => r[k] !== undefined);
				const hasTime = TIME_KEYS.some((k) => r[k === 'fractionalSecondDigits' ? 'frac' : k] !== undefined);
				let need = required === 'date' ? !hasDate : required === 'time' ? !hasTime : !hasDate && !hasTime;
				if (need && (defaults === 'date' || defaults === 'all')) r.year = r.month = r.day = 'numeric';
				if (need && (defaults === 'time' || defaults === 'all')) r.hour = r.minute = r.second = 'numeric';
			}
			this.#o = r;
		}
		get format() {
			const f = (d) => this.#format(d);
			define(this, 'format', f);
			return f;
		}
		#format(value) {
			const t = value === undefined ? DateC.now() : NumberC(brand(dateValue, value) ? dateValue(value) : value);
			if (!isFinite(t)) throw new RangeErrorC('Invalid time value');
			const d = new DateC(t), o = this.#o, u = o.utc;
			const f = {
				y: u ? d.getUTCFullYear() : d.getFullYear(), mo: u ? d.getUTCMonth() : d.getMonth(),
				da: u ? d.getUTCDate() : d.getDate(), wd: u ? d.getUTCDay() : d.getDay(),
				h: u ? d.getUTCHours() : d.getHours(), mi: u ? d.getUTCMinutes() : d.getMinutes(),
				s: u ? d.getUTCSeconds() : d.getSeconds(), ms: u ? d.getUTCMilliseconds() : d.getMilliseconds(),
				off: u ? 0 : d.getTimezoneOffset(),
			};
			const tzShort = () => {
				if (f.off === 0) return 'UTC';
				const a = Math.abs(f.off);
				return 'GMT' + (f.off > 0 ? '-' : '+') + Math.floor(a / 60) + (a % 60 ? ':' + pad2(a % 60) : '');
			};
			const tzLong = () => {
				if (f.off === 0) return 'Coordinated Universal Time';
				throw unsupported("timeZoneName 'long' outside UTC");
			};
			if (o.dateStyle || o.timeStyle) {
				const ds = o.dateStyle && {
					full: { weekday: 'long', month: 'long', day: 'numeric', year: 'numeric' },
					long: { month: 'long', day: 'numeric', year: 'numeric' },
					medium: { month: 'short', day: 'numeric', year: 'numeric' },
					short: { month: 'numeric', day: 'numeric', year: '2-digit' },
				}[o.dateStyle];
				const ts = o.timeStyle && {
					full: { hour: 'numeric', minute: '2-digit', second: '2-digit', tz: tzLong },
					long: { hour: 'numeric', minute: '2-digit', second: '2-digit', tz: tzShort },
					medium: { hour: 'numeric', minute: '2-digit', second: '2-digit' },
					short: { hour: 'numeric', minute: '2-digit' },
				}[o.timeStyle];
				const date = ds ? this.#date(f, ds) : '';
				const time = ts ? this.#time(f, { ...ts, h12: o.h12 }, ts.tz) : '';
				if (date && time) return date + (o.dateStyle === 'full' || o.dateStyle === 'long' ? ' at ' : ', ') + time;
				return date || time;
			}
			const date = this.#date(f, o);
			const hasTime = o.hour !== undefined || o.minute !== undefined || o.second !== undefined || o.frac !== undefined;
			const tz = o.tzName === 'short' ? tzShort : o.tzName === 'long' ? tzLong : undefined;
			const time = hasTime ? this.#time(f, o, tz) : '';
			const onlyWeekday = o.weekday && !o.year && !o.month && !o.day;
			if (date && time) return date + (onlyWeekday ? ' ' : o.month === 'long' ? ' at ' : ', ') + time;
			if (!time && tz) return date + ', ' + tz();
			return date || time;
		}
		#date(f, o) {
			const wd = o.weekday === 'long' ? DAYS[f.wd] : o.weekday === 'short' ? DAYS[f.wd].slice(0, 3) : o.weekday === 'narrow' ? DAYS[f.wd][0] : '';
			const y = o.year === '2-digit' ? pad2(f.y % 100) : o.year ? StringC(f.y) : '';
			const day = o.day === '2-digit' ? pad2(f.da) : o.day ? StringC(f.da) : '';
			let s;
			if (o.month === 'long' || o.month === 'short' || o.month === 'narrow') {
				const m = o.month === 'long' ? MONTHS[f.mo] : o.month === 'short' ? MONTHS[f.mo].slice(0, 3) : MONTHS[f.mo][0];
				s = m + (day ? ' ' + day : '') + (y ? (day ? ', ' : ' ') + y : '');
			} else {
				const m = o.month === '2-digit' ? pad2(f.mo + 1) : o.month ? StringC(f.mo + 1) : '';
				s = [m, day, y].filter((x) => x !== '').join('/');
			}
			return wd && s ? wd + ', ' + s : wd || s;
		}
		#time(f, o, tz) {
			const h12 = o.h12;
			let h = f.h;
			if (h12) h = h % 12 === 0 ? 12 : h % 12;
			let s = '';
			if (o.hour !== undefined) s = o.hour === '2-digit' || (!h12 && o.minute !== undefined) ? pad2(h) : StringC(h);
			if (o.minute !== undefined) s += (s ? ':' : '') + (s ? pad2(f.mi) : o.minute === '2-digit' ? pad2(f.mi) : StringC(f.mi));
			if (o.second !== undefined || o.frac !== undefined) s += (s ? ':' : '') + (s || o.second === '2-digit' ? pad2(f.s) : StringC(f.s));
			if (o.frac !== undefined) s += '.' + StringC(f.ms).padStart(3, '0').slice(0, o.frac);
			if (o.hour !== undefined && h12) s += ' ' + (f.h < 12 ? 'AM' : 'PM');
			if (tz) s += ' ' + tz();
			return s;
		}
		formatToParts() { throw unsupported('formatToParts'); }
		formatRange() { throw unsupported('formatRange'); }
		resolvedOptions() {
			const o = this.#o;
			const r = { locale: 'en-US', calendar: 'gregory', numberingSystem: 'latn',
				timeZone: o.utc || new DateC(0).getTimezoneOffset() === 0 ? 'UTC' : undefined };
			for (const k of [...DATE_KEYS, 'hour', 'minute', 'second', 'dateStyle', 'timeStyle']) if (o[k] !== undefined) r[k] = o[k];
			if (o.hour !== undefined || o.timeStyle) { r.hour12 = o.h12; r.hourCycle = o.h12 ? 'h12' : 'h23'; }
			return r;
		}
		static supportedLocalesOf(l) { return NumberFormat.supportedLocalesOf(l); }
	}

	// Collation: the three levels of the Unicode Collation Algorithm as
	// en-US applies them to Latin text: letters compared without accents
	// or case first (with digits before letters, and spaces and
	// punctuation before both), then accents, then case (lower first).
	// ICU's root order of ASCII spaces, punctuation and symbols (all before digits).
	const PUNCT = ' _-,;:!?.\'"()[]{}@*/\\&#%`^+<=>|~$';
	// Accents in ICU's secondary order; any other mark after them, by code point.
	const ACCENTS = '\u0301\u0300\u0306\u0302\u030c\u030a\u0308\u030b\u0303\u0307\u0327\u0328\u0304\u0309\u031b\u0323\u0331';
	const accentRank = (m) => { const i = ACCENTS.indexOf(m); return i >= 0 ? i : 64 + m.charCodeAt(0); };
	// Letters that sort as two (æ as ae), or as a base letter with a mark (ø as o).
	const EXPAND = { 'æ': 'ae', 'Æ': 'AE', 'œ': 'oe', 'Œ': 'OE', 'ß': 'ss', 'ẞ': 'SS' };
	const STROKE = { 'ø': 'o', 'Ø': 'O', 'ł': 'l', 'Ł': 'L', 'đ': 'd', 'Đ': 'D', 'ħ': 'h', 'Ħ': 'H' };
	const collKey = (s, numeric, ignorePunct) => {
		const base = [], accents = [], cases = [];
		s = StringC(s);
		// ASCII is its own NFD, and is classified below without a regex.
		const nfd = /^[\x00-\x7f]*$/.test(s) ? s : s.normalize('NFD').replace(/[øØłŁđĐħĦ]/g, (c) => STROKE[c] + '\u0338');
		for (let i = 0; i < nfd.length;) {
			const c = nfd.codePointAt(i);
			const ch = StringC.fromCodePoint(c);
			i += ch.length;
			if (c >= 0x300 && c <= 0x36f) { if (accents.length) accents[accents.length - 1] += StringC.fromCharCode(0x100 + accentRank(ch)); continue; }
			if (EXPAND[ch]) {
				// Two letters, a tertiary step above either case of them (ss < SS < ß < ẞ).
				for (const x of EXPAND[ch]) { base.push([2, x.toLowerCase().charCodeAt(0)]); accents.push(''); cases.push(x === x.toLowerCase() ? 3 : 4); }
				continue;
			}
			const ascii = c < 0x80, folded = c | 0x20;
			const lower = ascii ? (c >= 0x41 && c <= 0x5a ? StringC.fromCharCode(folded) : ch) : ch.toLowerCase();
			const isLetter = ascii ? folded >= 0x61 && folded <= 0x7a : lower !== ch.toUpperCase() || /\p{L}/u.test(ch);
			if (numeric && c >= 0x30 && c <= 0x39) {
				let j = i;
				while (j < nfd.length && nfd.charCodeAt(j) >= 0x30 && nfd.charCodeAt(j) <= 0x39) j++;
				const run = nfd.slice(i - 1, j).replace(/^0+(?=\d)/, '');
				i = j;
				base.push([1, run.length, run]);
				accents.push(''); cases.push(0);
				continue;
			}
			// ASCII: spaces, and every printable character but letters and digits, are \s, P or S.
			const spaceOrMark = ascii ? (c >= 9 && c <= 13) || (c >= 32 && c < 127 && !isLetter && !(c >= 0x30 && c <= 0x39)) :
				/[\s\p{P}\p{S}]/u.test(ch);
			if (spaceOrMark) { if (ignorePunct) continue; const k = PUNCT.indexOf(ch); base.push([0, k >= 0 ? k : 64 + c]); }
			else if (c >= 0x30 && c <= 0x39) base.push([1, 1, ch]);
			else if (isLetter) base.push([2, lower.codePointAt(0)]);
			else base.push([3, c]);
			accents.push('');
			cases.push(isLetter && ch !== lower ? 2 : 0);
		}
		return { base, accents, cases };
	};
	// A sort compares each string many times: its key is made once, kept in
	// a bounded cache per option pair (emptied when full; counted in the
	// program's heap like any of its objects).
	const KEYS_MAX = 8192;
	const keyCaches = [new Map(), new Map(), new Map(), new Map()];
	const cachedKey = (s, numeric, ignorePunct) => {
		const m = keyCaches[(numeric ? 1 : 0) + (ignorePunct ? 2 : 0)];
		let k = m.get(s);
		if (k === undefined) {
			if (m.size >= KEYS_MAX) m.clear();
			k = collKey(s, numeric, ignorePunct);
			m.set(s, k);
		}
		return k;
	};
	const cmpElem = (a, b) => {
		for (let i = 0; i < a.length; i++) {
			if (a[i] === b[i]) continue;
			return a[i] < b[i] ? -1 : 1;
		}
		return 0;
	};
	const cmpList = (a, b, cmp) => {
		for (let i = 0; i < a.length && i < b.length; i++) { const r = cmp(a[i], b[i]); if (r) return r; }
		return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
	};
	class Collator {
		#o;
		constructor(locales, options) {
			const o = options === undefined ? {} : Object(options);
			checkLocale(locales);
			const usage = pick(o, 'usage', ['sort', 'search'], 'sort');
			this.#o = {
				sensitivity: pick(o, 'sensitivity', ['base', 'accent', 'case', 'variant'], 'variant'),
				numeric: !!o.numeric,
				upper: pick(o, 'caseFirst', ['upper', 'lower', 'false'], 'false') === 'upper',
				ignorePunctuation: !!o.ignorePunctuation, usage,
			};
		}
		get compare() {
			const f = (a, b) => this.#compare(a, b);
			define(this, 'compare', f);
			return f;
		}
		#compare(a, b) {
			const o = this.#o;
			a = StringC(a);
			b = StringC(b);
			if (a === b) return 0;
			const x = cachedKey(a, o.numeric, o.ignorePunctuation), y = cachedKey(b, o.numeric, o.ignorePunctuation);
			let r = cmpList(x.base, y.base, cmpElem);
			if (r || o.sensitivity === 'base') return r;
			if (o.sensitivity !== 'case') {
				r = cmpList(x.accents, y.accents, (p, q) => (p === q ? 0 : p < q ? -1 : 1));
				if (r || o.sensitivity === 'accent') return r;
			}
			r = cmpList(x.cases, y.cases, (p, q) => Math.sign(p - q) * (o.upper && p + q === 2 ? -1 : 1));
			return r;
		}
		resolvedOptions() { return { locale: 'en-US', collation: 'default', ...this.#o }; }
		static supportedLocalesOf(l) { return NumberFormat.supportedLocalesOf(l); }
	}
	class PluralRules {
		#ordinal;
		constructor(locales, options) {
			checkLocale(locales);
			this.#ordinal = pick(options, 'type', ['cardinal', 'ordinal'], 'cardinal') === 'ordinal';
		}
		select(n) {
			n = NumberC(n);
			if (!this.#ordinal) return n === 1 ? 'one' : 'other';
			const t = n % 10, h = n % 100;
			return t === 1 && h !== 11 ? 'one' : t === 2 && h !== 12 ? 'two' : t === 3 && h !== 13 ? 'few' : 'other';
		}
		resolvedOptions() { return { locale: 'en-US', type: this.#ordinal ? 'ordinal' : 'cardinal' }; }
		static supportedLocalesOf(l) { return NumberFormat.supportedLocalesOf(l); }
	}
	const RT_UNITS = ['second', 'minute', 'hour', 'day', 'week', 'month', 'quarter', 'year'];
	const RT_SHORT = { second: 'sec.', minute: 'min.', hour: 'hr.', day: 'day', week: 'wk.', month: 'mo.', quarter: 'qtr.', year: 'yr.' };
	const RT_NARROW = { second: 's', minute: 'm', hour: 'h', day: 'd', week: 'w', month: 'mo', quarter: 'q', year: 'y' };
	const RT_NEAR = { day: ['yesterday', 'today', 'tomorrow'], second: [undefined, 'now', undefined] };
	class RelativeTimeFormat {
		#o;
		constructor(locales, options) {
			checkLocale(locales);
			this.#o = { style: pick(options, 'style', ['long', 'short', 'narrow'], 'long'),
				numeric: pick(options, 'numeric', ['always', 'auto'], 'always') };
			pick(options, 'numberingSystem', ['latn'], 'latn');
		}
		format(value, unit) {
			const o = this.#o, v = NumberC(value);
			let u = StringC(unit);
			if (u.endsWith('s')) u = u.slice(0, -1);
			if (!RT_UNITS.includes(u)) throw new RangeErrorC(`Invalid unit argument for format() '${unit}'`);
			if (!isFinite(v)) throw new RangeErrorC('Invalid number value');
			if (o.numeric === 'auto' && (v === 0 || v === 1 || v === -1) && !Object.is(v, -0)) {
				const near = RT_NEAR[u]?.[v + 1];
				if (near) return near;
				if (u !== 'second') {
					const w = o.style === 'long' || u === 'minute' || u === 'hour' ? u : RT_SHORT[u];
					if (v === 0) return 'this ' + (u === 'minute' || u === 'hour' ? u : w);
					if (u !== 'minute' && u !== 'hour') return (v < 0 ? 'last ' : 'next ') + w;
				}
			}
			const n = Math.abs(v), num = new NumberFormat('en-US').format(n);
			const past = v < 0 || Object.is(v, -0);
			let word;
			if (o.style === 'narrow') word = num + RT_NARROW[u];
			else if (o.style === 'short' && u !== 'day') word = num + ' ' + (u === 'quarter' && n !== 1 ? 'qtrs.' : RT_SHORT[u]);
			else word = num + ' ' + u + (n === 1 ? '' : 's');
			return past ? word + ' ago' : 'in ' + word;
		}
		formatToParts() { throw unsupported('formatToParts'); }
		resolvedOptions() { return { locale: 'en-US', numberingSystem: 'latn', ...this.#o }; }
		static supportedLocalesOf(l) { return NumberFormat.supportedLocalesOf(l); }
	}
	class ListFormat {
		#o;
		constructor(locales, options) {
			checkLocale(locales);
			this.#o = { type: pick(options, 'type', ['conjunction', 'disjunction', 'unit'], 'conjunction'),
				style: pick(options, 'style', ['long', 'short', 'narrow'], 'long') };
		}
		format(list) {
			const a = [];
			for (const x of list) {
				if (typeof x !== 'string') throw new TypeErrorC('Iterable yielded ' + StringC(x) + ' which is not a string');
				a.push(x);
			}
			const { type, style } = this.#o;
			if (type === 'unit') {
				const sep = style === 'narrow' ? ' ' : ', ';
				return a.join(sep);
			}
			const word = type === 'disjunction' ? 'or' : style === 'short' ? '&' : style === 'narrow' ? '' : 'and';
			if (a.length < 2) return a.join('');
			if (!word) return a.join(', ');
			if (a.length === 2) return a[0] + ' ' + word + ' ' + a[1];
			return a.slice(0, -1).join(', ') + ', ' + word + ' ' + a[a.length - 1];
		}
		formatToParts() { throw unsupported('formatToParts'); }
		resolvedOptions() { return { locale: 'en-US', ...this.#o }; }
		static supportedLocalesOf(l) { return NumberFormat.supportedLocalesOf(l); }
	}
	// Intl's constructors may be called without new (Intl.DateTimeFormat().resolvedOptions()).
	const callable = (C) => {
		const F = function (locales, options) { return new C(locales, options); };
		defineProperty(F, 'name', { value: C.name });
		defineProperty(F, 'prototype', { value: C.prototype });
		define(C.prototype, 'constructor', F);
		define(F, 'supportedLocalesOf', C.supportedLocalesOf);
		return F;
	};
	const Intl = {};
	for (const C of [NumberFormat, DateTimeFormat, Collator]) define(Intl, C.name, callable(C));
	for (const C of [PluralRules, RelativeTimeFormat, ListFormat]) define(Intl, C.name, C);
	define(Intl, 'getCanonicalLocales', (l) => (checkLocale(l), l === undefined ? [] : ['en-US']));
	define(global, 'Intl', Intl);

	define(Number.prototype, 'toLocaleString', function toLocaleString(locales, options) {
		return new NumberFormat(locales, options).format(numberValue(this));
	});
	define(BigInt.prototype, 'toLocaleString', function toLocaleString(locales, options) {
		return new NumberFormat(locales, options).format(BigInt.prototype.valueOf.call(this));
	});
	const dateMethod = (name, required, defaults) =>
		define(Date.prototype, name, {
			[name](locales, options) {
				const t = dateValue(this);
				if (t !== t) return 'Invalid Date';
				return new DateTimeFormat(locales, options, required, defaults).format(t);
			},
		}[name]);
	dateMethod('toLocaleString', 'any', 'all');
	dateMethod('toLocaleDateString', 'date', 'date');
	dateMethod('toLocaleTimeString', 'time', 'time');
	// Arrays pass their locales and options on to each element (ECMA-402).
	const listLocale = function toLocaleString(locales, options) {
		const n = this.length, parts = new Array(n);
		for (let i = 0; i < n; i++) {
			const x = this[i];
			parts[i] = x === undefined || x === null ? '' : StringC(x.toLocaleString(locales, options));
		}
		return parts.join(',');
	};
	define(Array.prototype, 'toLocaleString', listLocale);
	define(getPrototypeOf(Uint8Array.prototype), 'toLocaleString', listLocale);
	// Case mappings are the same in en-US as without a locale; another locale is refused.
	for (const name of ['toLocaleUpperCase', 'toLocaleLowerCase']) {
		const plain = name === 'toLocaleUpperCase' ? String.prototype.toUpperCase : String.prototype.toLowerCase;
		define(String.prototype, name, { [name](locales) { checkLocale(locales); return plain.call(this); } }[name]);
	}
	let plainCollator; // the one localeCompare without locales or options uses
	define(String.prototype, 'localeCompare', function localeCompare(that, locales, options) {
		if (this === undefined || this === null) throw new TypeErrorC('String.prototype.localeCompare called on null or undefined');
		if (locales === undefined && options === undefined)
			return (plainCollator ??= new Collator()).compare(StringC(this), StringC(that));
		return new Collator(locales, options).compare(StringC(this), StringC(that));
	});

	// ---- the return value (and a tool call's arguments) -------------------------------------
	// JSON a model expects from what a program returns: a Map becomes an
	// object when every key is a string or a number (distinct as strings),
	// else an array of [key, value] pairs; a Set an array; a Date its ISO
	// string (an invalid one null); a BigInt a number when it is a safe
	// integer, else its decimal string; a typed array, ArrayBuffer or
	// DataView an array of its numbers; an Error {name, message}; a RegExp its
	// source text; URLSearchParams its query string (a URL is its href, by
	// its toJSON); the rest as JSON.stringify does. At most 128 levels deep
	// (the gateway's JSON depth gate); a cycle, or a Promise left
	// unawaited, is an error naming where in the value it is.
	const MAX_DEPTH = 128;
	// what: 'the return value' (named value in a path) or 'the arguments' (args).
	const keyPath = (k) => (/^[A-Za-z_$][\w$]*$/.test(k) ? '.' + k : '[' + JSON.stringify(k) + ']');
	const toResult = (root, what = 'the return value') => {
		const name = what === 'the arguments' ? 'args' : 'value';
		const at = (path) => (path === '' ? what + ' itself' : name + path);
		const is = name === 'args' ? 'are' : 'is';
		const open = new SetC();
		const seen = uncurry(Set.prototype.has), add = uncurry(Set.prototype.add), del = uncurry(Set.prototype.delete);
		const walk = (v, path, depth, holder, key) => {
			if (typeof v === 'object' && v !== null && typeof v.toJSON === 'function' && !brand(dateValue, v)) v = v.toJSON(key);
			switch (typeof v) {
			case 'bigint': return isSafe(NumberC(v)) ? NumberC(v) : bigintString(v);
			case 'function': case 'symbol': case 'undefined': return undefined;
			case 'object': break;
			default: return v;
			}
			if (v === null) return null;
			if (depth >= MAX_DEPTH) throw new RangeErrorC(`${what} ${is} nested deeper than ${MAX_DEPTH} levels at ${at(path)}`);
			if (seen(open, v)) throw new TypeErrorC(`${what} ${is} circular: ${at(path)} holds a value that contains it`);
			if (isInstance(v, PromiseC)) throw new TypeErrorC(`${what} hold${name === 'args' ? '' : 's'} a Promise at ${at(path)}: await it (e.g. with await Promise.all([...]))`);
			add(open, v);
			let out;
			const item = (x, p, k) => { const r = walk(x, path + p, depth + 1, v, k); return r === undefined ? null : r; };
			if (brand(dateValue, v)) out = dateValue(v) === dateValue(v) ? dateISO(v) : null;
			else if (brand(mapSize, v)) {
				const pairs = [];
				let plain = true;
				const names = new SetC();
				for (const it = mapEntries(v); ;) {
					const r = mapIterNext(it);
					if (r.done) break;
					const k = r.value[0];
					if ((typeof k !== 'string' && typeof k !== 'number') || seen(names, StringC(k))) plain = false;
					else add(names, StringC(k));
					pairs[pairs.length] = r.value;
				}
				if (plain) {
					out = {};
					for (let i = 0; i < pairs.length; i++) {
						const k = StringC(pairs[i][0]);
						const r = walk(pairs[i][1], path + keyPath(k), depth + 1, v, k);
						if (r !== undefined) defineProperty(out, k, { value: r, enumerable: true, writable: true, configurable: true });
					}
				} else {
					out = new Array(pairs.length);
					for (let i = 0; i < pairs.length; i++)
						out[i] = [item(pairs[i][0], `[${i}][0]`, '0'), item(pairs[i][1], `[${i}][1]`, '1')];
				}
			} else if (brand(setSize, v)) {
				out = [];
				let i = 0;
				for (const it = setValues(v); ; i++) {
					const r = setIterNext(it);
					if (r.done) break;
					out[i] = item(r.value, `[${i}]`, StringC(i));
				}
			} else if (brand(taLength, v)) {
				const n = taLength(v);
				out = new Array(n);
				for (let i = 0; i < n; i++) out[i] = item(v[i], `[${i}]`, StringC(i));
			} else if (brand(abLength, v) || brand(dvLength, v)) {
				const u = brand(abLength, v) ? new Uint8C(v) : new Uint8C(dvBuffer(v), dvOffset(v), dvLength(v));
				out = new Array(u.length);
				for (let i = 0; i < u.length; i++) out[i] = u[i];
			} else if (isArray(v)) {
				const n = v.length;
				out = new Array(n);
				for (let i = 0; i < n; i++) out[i] = item(v[i], `[${i}]`, StringC(i));
			} else if (brand(numberValue, v)) out = numberValue(v);
			else if (brand(stringValue, v)) out = stringValue(v);
			else if (brand(booleanValue, v)) out = booleanValue(v);
			else if (isInstance(v, RegExpC)) out = regexpString(v);
			else if (isInstance(v, URLSearchParams)) out = v.toString();
			else {
				out = {};
				if (isInstance(v, ErrorC)) { out.name = StringC(v.name); out.message = StringC(v.message); }
				const ks = keys(v);
				for (let i = 0; i < ks.length; i++) {
					const r = walk(v[ks[i]], path + keyPath(ks[i]), depth + 1, v, ks[i]);
					if (r !== undefined) defineProperty(out, ks[i], { value: r, enumerable: true, writable: true, configurable: true });
				}
			}
			del(open, v);
			return out;
		};
		return walk(root, '', 0, undefined, '');
	};

	// The hooks the worker calls (src/sandbox/runtime.c).
	const fixClock = (t) => {
		const D = DateC;
		const F = function Date(...a) {
			const now = t + Math.floor(host.now());
			if (!new.target) return new D(now).toString();
			return a.length ? new D(...a) : new D(now);
		};
		defineProperty(F, 'prototype', { value: D.prototype });
		F.now = () => t + Math.floor(host.now());
		F.parse = D.parse;
		F.UTC = D.UTC;
		defineProperty(D.prototype, 'constructor', { value: F, writable: true, configurable: true });
		define(global, 'Date', F);
	};
	return freeze({
		// A program starts: its time limit, and a fixed clock (replayable) or none.
		start(limit, clock) {
			limitMs = limit;
			virtual = typeof clock === 'number';
			timers.clear();
			if (virtual) fixClock(clock);
			origin = virtual ? clock : DateC.now();
			return virtual;
		},
		// The earliest timer's time on the program's clock, or -1.
		next() { const e = earliest(); return e ? e[1].due : -1; },
		// Runs the earliest timer (the worker calls it when that time has come).
		fire() {
			const e = earliest();
			if (!e) return;
			const [id, t] = e;
			if (virtual) host.advance(t.due);
			if (t.every) {
				if (t.due + t.every > limitMs)
					throw new RangeErrorC(`setInterval: its next run, ${t.every} ms on, would be after the program's ` +
						`time limit of ${limitMs} ms: stop it with clearInterval`);
				t.due += t.every;
				t.seq = seq++;
			} else {
				mapDelete(timers, id);
			}
			t.cb(...t.args);
		},
		// v as JSON.stringify should get it; what names it in errors.
		result: (v, what) => toResult(v, what),
	});
})
