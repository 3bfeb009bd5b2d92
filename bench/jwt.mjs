// make bench, HTTPS + JWT row: a stand-in authorization server for
// bench/http.sh. It makes an RSA key, serves its JWK Set at
// http://127.0.0.1:PORT/jwks (the port the kernel picks), signs one access
// token for the resource given as argv[2] (RS256, typ at+jwt, iss
// http://127.0.0.1:PORT, an hour of validity), prints "PORT TOKEN" and
// serves until it is killed. Only node's own crypto and http.
import { generateKeyPairSync, createSign } from 'node:crypto';
import http from 'node:http';

const resource = process.argv[2];
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'bench-1', alg: 'RS256', use: 'sig' };
const b64u = (v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

const server = http.createServer((req, res) => {
	res.setHeader('content-type', 'application/json');
	res.end(JSON.stringify({ keys: [jwk] }));
});
server.listen(0, '127.0.0.1', () => {
	const port = server.address().port;
	const now = Math.floor(Date.now() / 1000);
	const input = `${b64u({ alg: 'RS256', kid: 'bench-1', typ: 'at+jwt' })}.${b64u({
		iss: `http://127.0.0.1:${port}`, aud: resource, sub: 'bench', client_id: 'httpbench',
		scope: 'mcp', iat: now, exp: now + 3600 })}`;
	const sig = createSign('RSA-SHA256').update(input).sign(privateKey).toString('base64url');
	process.stdout.write(`${port} ${input}.${sig}\n`);
});
