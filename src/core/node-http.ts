// node:http for the agent without Node's bundled undici. An ES import of node:http builds the module namespace from
// all its exports, and three of them (WebSocket, CloseEvent, MessageEvent) are lazy getters that load undici: about
// 5 MB of source and code the agent never runs. require() reads only the exports asked for.
import { createRequire } from 'node:module';

const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');

export const { Agent, createServer, request, STATUS_CODES } = http;
export type Agent = import('node:http').Agent;
export type { IncomingMessage, OutgoingHttpHeaders, Server, ServerResponse } from 'node:http';
