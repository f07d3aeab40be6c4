/**
 * A TCP proxy to cut a store off without stopping the shared server: outages (refused, black-holed, silent
 * network) produced where they really happen, on the wire between the service and its database or Redis.
 */
import net from 'node:net';

interface Link {
  client: net.Socket;
  upstream: net.Socket | undefined;
  /** While frozen, bytes are held in both directions as a silent network would (nothing lost, nothing sent). */
  frozen: boolean;
  held: { toUpstream: Buffer[]; toClient: Buffer[] };
}

/**
 * `pass` forwards; `blackhole()` accepts new connections and never answers them while freezing the open
 * ones (a silent network); `refuse()` closes the port (connection refused); `dropAll()` cuts every open
 * connection. `restore()` goes back to forwarding on the same port; frozen links resume where they were.
 */
export class TcpProxy {
  port = 0;
  private server: net.Server | undefined;
  private mode: 'pass' | 'blackhole' = 'pass';
  private readonly links = new Set<Link>();
  /** Set by loseNextResponse(): called with the connection whose answer is to be lost. */
  private loseResponse: ((link: Link) => void) | undefined;

  constructor(
    private readonly target: { host: string; port: number },
    private readonly label: string,
  ) {}

  async start(): Promise<this> {
    const server = net.createServer((socket) => this.accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
    return this;
  }

  get connections(): number {
    return this.links.size;
  }

  private accept(client: net.Socket): void {
    client.setNoDelay(true);
    const link: Link = { client, upstream: undefined, frozen: false, held: { toUpstream: [], toClient: [] } };
    this.links.add(link);
    client.on('error', () => {});
    client.once('close', () => {
      this.links.delete(link);
      link.upstream?.destroy();
    });
    if (this.mode === 'blackhole') {
      // Accepted, read, never answered: a connect that "succeeds" into nowhere.
      link.frozen = true;
      client.resume();
      return;
    }
    const upstream = net.connect(this.target);
    link.upstream = upstream;
    upstream.setNoDelay(true);
    upstream.on('error', () => {});
    upstream.once('close', () => client.destroy());
    client.on('data', (chunk: Buffer) => {
      if (link.frozen) link.held.toUpstream.push(chunk);
      else upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (this.loseResponse) return this.loseResponse(link);
      if (link.frozen) link.held.toClient.push(chunk);
      else client.write(chunk);
    });
  }

  /**
   * The next answer to arrive from upstream is thrown away and its connection cut: the server has done the
   * work and answered, the client sees the connection break (a response lost on the way). Resolves then.
   */
  loseNextResponse(): Promise<void> {
    return new Promise((resolve) => {
      this.loseResponse = (link) => {
        this.loseResponse = undefined;
        link.client.destroy();
        link.upstream?.destroy();
        resolve();
      };
    });
  }

  dropAll(): void {
    for (const link of this.links) {
      link.client.destroy();
      link.upstream?.destroy();
    }
    this.links.clear();
  }

  blackhole(): void {
    this.mode = 'blackhole';
    for (const link of this.links) link.frozen = true;
  }

  refuse(): void {
    // close() stops listening at once; its callback would wait for open connections, so it is not awaited.
    this.server?.close();
    this.server = undefined;
  }

  async restore(): Promise<void> {
    this.mode = 'pass';
    for (const link of [...this.links]) {
      if (!link.upstream) {
        // Accepted while blackholed, never connected anywhere: the peer has long given up on it.
        link.client.destroy();
        this.links.delete(link);
        continue;
      }
      link.frozen = false;
      for (const chunk of link.held.toUpstream.splice(0)) link.upstream.write(chunk);
      for (const chunk of link.held.toClient.splice(0)) link.client.write(chunk);
    }
    if (!this.server) await this.start();
  }

  close(): void {
    this.refuse();
    this.dropAll();
  }

  toString(): string {
    return `${this.label} proxy 127.0.0.1:${this.port}`;
  }
}
