// The Node column of the client matrix: https.request with `ca` set to the built-in CA (which replaces Node's bundled
// roots) and every other TLS option at its default. Usage: node node-client.mjs CA.pem HOST PORT: loads
// https://HOST:PORT/ once, prints one line (the status, or Node's error) and exits 0 when it read an HTTP 200, 1 when
// it did not. A DNS name resolves to 127.0.0.1 through `lookup`, so SNI and the name check keep the name.
import fs from 'node:fs';
import https from 'node:https';

const [caFile, host, port] = process.argv.slice(2);
if (!caFile || !host || !port) {
  console.error('usage: node node-client.mjs CA.pem HOST PORT');
  process.exit(64);
}
const ca = fs.readFileSync(caFile);
const lookup = (hostname, options, callback) =>
  options && options.all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4);

const describe = (error) => `${error.code ?? error.name}: ${error.message}`;

function fetch() {
  return new Promise((resolve) => {
    const request = https.request(
      { host, port: Number(port), path: '/', method: 'GET', ca, agent: false, lookup, timeout: 15000,
        headers: { Connection: 'close' } },
      (response) => {
        const protocol = response.socket.getProtocol?.() ?? '?';
        response.resume();
        response.on('end', () => resolve({ accepted: response.statusCode === 200,
                                           detail: `HTTP ${response.statusCode}, ${protocol}` }));
        response.on('error', (error) => resolve({ accepted: false, detail: describe(error) }));
      });
    request.on('timeout', () => request.destroy(new Error('no answer within 15 s')));
    request.on('error', (error) => resolve({ accepted: false, detail: describe(error) }));
    request.end();
  });
}

const result = await fetch();
process.stdout.write(result.detail.replace(/\s+/g, ' ') + '\n');
process.exitCode = result.accepted ? 0 : 1;
