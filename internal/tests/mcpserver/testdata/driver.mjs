// A test driver for Fenix's MCP server built on the official TypeScript SDK
// (@modelcontextprotocol/sdk). Usage: node driver.mjs CONFIG_JSON
//
// CONFIG: {"transport": "stdio"|"http"|"sse", "command", "args", "env" (stdio),
//          "url", "headers" (http, sse), "oauth": true (http: sign in first),
//          "elicit": "accept"|"decline"|undefined, "elicitContent": {…} (what accept answers),
//          "logLevel": a level to set once connected (log messages become "log" events),
//          "steps": [{"op": "list"} | {"op": "call", "name", "arguments",
//          "abortAfterMs", "progress": true} | resources, templates, read, prompts, prompt]}
// Every event is one JSON line on stdout.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { CallToolResultSchema, ElicitRequestSchema, LoggingMessageNotificationSchema, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const cfg = JSON.parse(process.argv[2]);
const emit = (event) => process.stdout.write(JSON.stringify(event) + '\n');

const capabilities = cfg.elicit ? { elicitation: {} } : {};
const client = new Client({ name: 'fenix-ts-driver', version: '1.0.0' }, { capabilities });
if (cfg.elicit) {
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    emit({ event: 'elicit', message: req.params.message, requestedSchema: req.params.requestedSchema });
    return cfg.elicit === 'accept'
      ? { action: 'accept', content: cfg.elicitContent || { reason: 'driver says yes' } }
      : { action: 'decline' };
  });
}

// An OAuth client as the SDK's examples keep one, in memory. The
// browser's part: the authorization URL is fetched, and the code read from
// the redirect it answers with (the test's authorization server consents
// at once).
class MemoryOAuthProvider {
  get redirectUrl() { return 'http://localhost:1/callback'; }
  get clientMetadata() {
    return { client_name: 'fenix-ts-driver', redirect_uris: [this.redirectUrl], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  clientInformation() { return this.client; }
  saveClientInformation(info) { this.client = info; }
  tokens() { return this.saved; }
  saveTokens(tokens) { this.saved = tokens; }
  saveCodeVerifier(v) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
  async redirectToAuthorization(url) {
    const res = await fetch(url, { redirect: 'manual' });
    this.code = new URL(res.headers.get('location')).searchParams.get('code');
    emit({ event: 'authorized', status: res.status });
  }
}
const authProvider = cfg.oauth ? new MemoryOAuthProvider() : undefined;

let transport;
if (cfg.transport === 'stdio') {
  transport = new StdioClientTransport({
    command: cfg.command, args: cfg.args || [],
    env: { ...process.env, ...(cfg.env || {}) }, stderr: 'inherit',
  });
} else if (cfg.transport === 'sse') {
  transport = new SSEClientTransport(new URL(cfg.url), { requestInit: { headers: cfg.headers || {} } });
} else {
  transport = new StreamableHTTPClientTransport(new URL(cfg.url), { requestInit: { headers: cfg.headers || {} }, authProvider });
}

try {
  try {
    await client.connect(transport);
  } catch (err) {
    if (!(authProvider && err instanceof UnauthorizedError)) throw err;
    await transport.finishAuth(authProvider.code);
    transport = new StreamableHTTPClientTransport(new URL(cfg.url), { requestInit: { headers: cfg.headers || {} }, authProvider });
    await client.connect(transport);
  }
  emit({ event: 'connected', server: client.getServerVersion(), capabilities: client.getServerCapabilities(), sessionId: transport.sessionId });
  if (cfg.logLevel) {
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => emit({ event: 'log', params: n.params }));
    await client.setLoggingLevel(cfg.logLevel);
  }
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => emit({ event: 'updated', uri: n.params.uri }));
  for (const step of cfg.steps) {
    if (step.op === 'list') {
      const { tools } = await client.listTools();
      emit({ event: 'tools', tools });
      continue;
    }
    if (['resources', 'templates', 'read', 'prompts', 'prompt', 'complete', 'subscribe', 'unsubscribe'].includes(step.op)) {
      try {
        if (step.op === 'resources') emit({ event: 'resources', resources: (await client.listResources()).resources });
        else if (step.op === 'templates') emit({ event: 'templates', templates: (await client.listResourceTemplates()).resourceTemplates });
        else if (step.op === 'prompts') emit({ event: 'prompts', prompts: (await client.listPrompts()).prompts });
        else if (step.op === 'prompt') emit({ event: 'prompt', name: step.name, result: await client.getPrompt({ name: step.name, arguments: step.arguments }) });
        else if (step.op === 'complete') emit({ event: 'complete', result: await client.complete({ ref: step.ref, argument: step.argument, context: step.context }) });
        else if (step.op === 'subscribe') { await client.subscribeResource({ uri: step.uri }); emit({ event: 'subscribed', uri: step.uri }); }
        else if (step.op === 'unsubscribe') { await client.unsubscribeResource({ uri: step.uri }); emit({ event: 'unsubscribed', uri: step.uri }); }
        else emit({ event: 'read', uri: step.uri, result: await client.readResource({ uri: step.uri }) });
      } catch (err) {
        emit({ event: 'resource_error', op: step.op, uri: step.uri, code: err && err.code, message: String(err && err.message || err) });
      }
      if (step.pauseMs) await new Promise((r) => setTimeout(r, step.pauseMs));
      continue;
    }
    const ac = new AbortController();
    if (step.abortAfterMs) setTimeout(() => ac.abort('driver aborts'), step.abortAfterMs);
    const started = performance.now();
    try {
      const result = await client.callTool({ name: step.name, arguments: step.arguments || {} }, CallToolResultSchema, {
        signal: ac.signal, timeout: 120000, resetTimeoutOnProgress: true,
        onprogress: step.progress ? (p) => emit({ event: 'progress', progress: p.progress, message: p.message }) : undefined,
      });
      emit({ event: 'result', name: step.name, result, ms: performance.now() - started });
    } catch (err) {
      emit({ event: 'call_error', name: step.name, message: String(err && err.message || err), ms: performance.now() - started });
    }
    if (step.pauseMs) await new Promise((r) => setTimeout(r, step.pauseMs));
  }
  await client.close();
  emit({ event: 'done' });
} catch (err) {
  emit({ event: 'fatal', message: String(err && err.stack || err) });
  process.exitCode = 1;
}
