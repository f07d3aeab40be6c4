// Types of check-node.mjs, plain JavaScript so that it runs before anything is built.
export declare const MINIMUM: string;
export declare const SUPPORTED: string;
export declare function unsupported(version: string): string | undefined;
