/**
 * Baseline: a bare `ws` server that sends one JSON text to every connected socket when asked
 * (`POST /broadcast` with the text as body); it answers once every send was queued.
 */
import http from 'node:http';
import { WebSocketServer } from 'ws';

const server = http.createServer((req, res) => {
  if (req.url === '/readyz') return void res.end('{}');
  if (req.url === '/clients') return void res.end(String(wss.clients.size));
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c: string) => (body += c));
  req.on('end', () => {
    for (const socket of wss.clients) socket.send(body);
    res.statusCode = 204;
    res.end();
  });
});
const wss = new WebSocketServer({ server });
server.listen(Number(process.env.PORT), '127.0.0.1');
