// The typings of the browser library (client.js). hoster gen
// (pkg/gen/client.go) writes them into each game folder as
// hoster.client.d.ts: above them a header naming the game, and in the three
// interfaces PlayerFields, EntityFields and CommandArgs the game's own
// fields and commands; everything after this comment is written as it
// stands. As it stands it types the library of a game with no fields and no
// commands.

export interface PlayerFields {}

export interface Player extends PlayerFields { id: string; type: "player" }

export interface EntityFields {
}

export type Entity = { [T in keyof EntityFields]: EntityFields[T] & { id: string; type: T } }[keyof EntityFields];

export interface CommandArgs {
}

export interface Welcome { t: "welcome"; game: string; instance: string; player: string; tickRate: number; sendRate: number; resume?: string; room?: string; types?: WireType[] }
/** A field table of the compact wire format (hoster.compact.1; docs/protocol.md): present in the welcome only on that format. */
export interface WireType { type: string; fields: WireField[]; private?: WireField[] }
export interface WireField { name: string; type: "number" | "integer" | "string" | "boolean"; q?: number }
export interface CloseInfo { code: number; reason: string; reconnecting: boolean }

export interface Events {
  open: () => void;
  welcome: (m: Welcome) => void;
  appear: (thing: Player | Entity) => void;
  change: (thing: Player | Entity, changed: Record<string, unknown>) => void;
  gone: (thing: Player | Entity) => void;
  /** A rejected command (command names it) or a refusal: instance.refuse's reason. */
  error: (message: string, command?: keyof CommandArgs) => void;
  /** From instance.send or instance.broadcast. */
  message: (type: string, data: unknown) => void;
  close: (info: CloseInfo) => void;
}

export interface Connection {
  readonly game: string;
  readonly players: Record<string, Player>;
  readonly entities: Record<string, Entity>;
  readonly me: string | null;
  readonly instance: string | null;
  /** The private room's code (connect({room}) or the page's ?room=), else null. */
  readonly room: string | null;
  readonly connected: boolean;
  readonly commands: { [C in keyof CommandArgs]: (args: CommandArgs[C]) => void };
  on<E extends keyof Events>(event: E, fn: Events[E]): Connection;
  off<E extends keyof Events>(event: E, fn: Events[E]): Connection;
  send<C extends keyof CommandArgs>(name: C, args: CommandArgs[C]): void;
  /** The argument rule of the server: null when valid, else the message. */
  validate<C extends keyof CommandArgs>(name: C, args: unknown): string | null;
  close(): void;
  /** The thing with this id for drawing: its fields, with those fields.json marks
   * "interpolate" smoothed between the last two updates, one send interval behind the
   * server (players and entities stay the raw mirror). null when unknown. */
  view(id: string): Player | Entity | null;
}

export interface ConnectOptions {
  /** The WebSocket implementation, for environments without a global one
   * (in Node: require("ws")). */
  WebSocket?: unknown;
}

/**
 * Connects to the game; the URL defaults to the script's own origin and game.
 * params reach the join hook; params.room (letters and digits, up to 32) joins
 * or starts the private room with that code, and defaults to the page's ?room=.
 */
export declare function connect(url?: string, params?: Record<string, string>, options?: ConnectOptions): Connection;
export declare function connect(params: Record<string, string>, options?: ConnectOptions): Connection;
/** The link a player shares to a private room: the page's origin and path with
 * ?room=code, and nothing else of the page's query or fragment. */
export declare function roomLink(code: string): string;

/** This game, "<domain>/<game>". */
export declare const game: string;
/** The argument rule of the server, for any command: null when valid, else the message. */
export declare function validate<C extends keyof CommandArgs>(name: C, args: unknown): string | null;
/** In a plain <script> page, every game library loaded on it, by game. */
export declare const games: Record<string, unknown> | undefined;

/** A plain <script src=".../hoster.client.js"> page sees this module as the global Hoster. */
export as namespace Hoster;
