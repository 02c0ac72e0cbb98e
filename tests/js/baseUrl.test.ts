/**
 * Every URL the client builds (REST calls, the run and telemetry sockets, download links) sits
 * under the server's base URL, as JupyterHub serves a learner's server at /user/<name>/.
 * tests/python/test_jupyterhub.py and test_base_url_and_auth.py serve these same paths for real.
 */
import { ServerConnection } from '@jupyterlab/services';
import { GpudojoClient, runStreamUrl, telemetryUrl } from '../../extension/src/api/client';

const BASE = 'http://127.0.0.1:19311/user/alice/';
const WS = 'ws://127.0.0.1:19311/user/alice/';

class FakeHeaders {
  private readonly _values = new Map<string, string>();
  constructor(init?: Record<string, string>) {
    Object.entries(init ?? {}).forEach(([k, v]) => this._values.set(k.toLowerCase(), v));
  }
  has(name: string): boolean {
    return this._values.has(name.toLowerCase());
  }
  get(name: string): string | null {
    return this._values.get(name.toLowerCase()) ?? null;
  }
  set(name: string, value: string): void {
    this._values.set(name.toLowerCase(), value);
  }
  append(name: string, value: string): void {
    this.set(name, value);
  }
}

class FakeRequest {
  readonly headers: FakeHeaders;
  readonly method: string;
  constructor(
    readonly url: string,
    init: { method?: string; headers?: Record<string, string> } = {}
  ) {
    this.method = init.method ?? 'GET';
    this.headers = new FakeHeaders(init.headers);
  }
}

function settingsFor(seen: string[]): ServerConnection.ISettings {
  const fetch = async (request: FakeRequest) => {
    seen.push(request.url);
    return {
      ok: true,
      status: 200,
      statusText: 'OK',
      headers: new FakeHeaders({ 'content-type': 'application/json' }),
      text: async () => JSON.stringify({ runs: [], labs: [], problems: [] })
    };
  };
  return ServerConnection.makeSettings({
    baseUrl: BASE,
    wsUrl: WS,
    token: 'tok en',
    appendToken: false,
    fetch: fetch as unknown as typeof globalThis.fetch,
    Request: FakeRequest as unknown as typeof globalThis.Request,
    Headers: FakeHeaders as unknown as typeof globalThis.Headers
  });
}

describe('URLs under a base URL', () => {
  it('sends REST calls to {baseUrl}gpudojo/api/...', async () => {
    const seen: string[] = [];
    const client = new GpudojoClient(settingsFor(seen));
    await client.listRuns();
    expect(seen).toHaveLength(1);
    expect(seen[0].startsWith(`${BASE}gpudojo/api/runs`)).toBe(true);
  });

  it('opens sockets under {wsUrl}gpudojo/api/... with the token in the query', () => {
    const settings = settingsFor([]);
    expect(runStreamUrl(settings, '20260101-120000-abcdef', 41)).toBe(
      `${WS}gpudojo/api/runs/20260101-120000-abcdef/stream?after=41&token=tok%20en`
    );
    expect(telemetryUrl(settings, 4)).toBe(`${WS}gpudojo/api/gpu/telemetry?hz=4&token=tok%20en`);
  });

  it('builds download links a browser can follow without headers', () => {
    const client = new GpudojoClient(settingsFor([]));
    expect(client.profileRawUrl('file:step.json')).toBe(
      `${BASE}gpudojo/api/profile/raw?trace=file%3Astep.json&token=tok%20en`
    );
    expect(client.memoryRawUrl('run:1:rank0')).toBe(
      `${BASE}gpudojo/api/memory/raw?capture=run%3A1%3Arank0&token=tok%20en`
    );
  });
});
