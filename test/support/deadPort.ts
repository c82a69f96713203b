import http from "node:http";
import type { AddressInfo } from "node:net";

/** A loopback port that was just free and has nothing listening on it: a dead endpoint. */
export async function deadPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
