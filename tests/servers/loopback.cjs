// Preloaded (NODE_OPTIONS=--require) into a real server from npm that binds
// every interface with no option to choose: its listen() gets 127.0.0.1, so
// a test's server is reachable from this machine only. Used by
// tests/e2e/apps.test.mjs for the ext-apps example server, which listens
// on 0.0.0.0.
'use strict';
const net = require('node:net');

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
	if (typeof args[0] === 'number' || typeof args[0] === 'string' && /^\d+$/.test(args[0])) {
		if (typeof args[1] !== 'string' || args[1] === '0.0.0.0' || args[1] === '::') {
			const rest = typeof args[1] === 'string' ? args.slice(2) : args.slice(1);
			return listen.call(this, Number(args[0]), '127.0.0.1', ...rest);
		}
	} else if (args[0] && typeof args[0] === 'object' && args[0].port !== undefined) {
		if (!args[0].host || args[0].host === '0.0.0.0' || args[0].host === '::')
			args[0] = { ...args[0], host: '127.0.0.1' };
	}
	return listen.apply(this, args);
};
