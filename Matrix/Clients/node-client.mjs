// The Node column of the client matrix: https.request with `ca` set to the built-in CA (which replaces Node's bundled
// roots) and every other TLS option at its default. Usage: node node-client.mjs CA.pem TARGETS (one
// ID<TAB>HOST<TAB>PORT line each); one JSON line per target on standard output. DNS names resolve to 127.0.0.1
// through `lookup`, so SNI and the name check keep the name.
import fs from 'node:fs';
import https from 'node:https';

const [caFile, targetsFile] = process.argv.slice(2);
if (!caFile || !targetsFile) {
  console.error('usage: node node-client.mjs CA.pem TARGETS');
  process.exit(64);
}
const ca = fs.readFileSync(caFile);
const lookup = (hostname, options, callback) =>
  options && options.all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4);

function fetch(host, port) {
  return new Promise((resolve) => {
    const request = https.request(
      { host, port, path: '/', method: 'GET', ca, agent: false, lookup, timeout: 15000, headers: { Connection: 'close' } },
      (response) => {
        const protocol = response.socket.getProtocol?.() ?? '?';
        response.resume();
        response.on('end', () => resolve({ accepted: response.statusCode === 200, detail: `HTTP ${response.statusCode}, ${protocol}` }));
        response.on('error', (error) => resolve({ accepted: false, detail: `${error.code ?? error.name}: ${error.message}` }));
      });
    request.on('timeout', () => request.destroy(new Error('no answer within 15 s')));
    request.on('error', (error) => resolve({ accepted: false, detail: `${error.code ?? error.name}: ${error.message}` }));
    request.end();
  });
}

for (const line of fs.readFileSync(targetsFile, 'utf8').split('\n')) {
  const [id, host, port] = line.split('\t');
  if (!port) continue;
  const result = await fetch(host, Number(port));
  process.stdout.write(JSON.stringify({ id, ...result, detail: result.detail.replace(/\s+/g, ' ') }) + '\n');
}
