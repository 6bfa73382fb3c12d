// The part of madge's API the source-rules test uses (madge ships no types of its own).
declare module 'madge' {
  interface MadgeConfig {
    readonly fileExtensions?: readonly string[];
    /** Path of a tsconfig.json: its module resolution (NodeNext `.js` → `.ts`) resolves the imports. */
    readonly tsConfig?: string;
    readonly detectiveOptions?: {
      readonly ts?: { readonly skipTypeImports?: boolean; readonly skipAsyncImports?: boolean };
    };
  }

  interface MadgeResult {
    /** Each circle as the files on it, relative to the scanned folder. */
    circular(): string[][];
    /** Every file found, with the files it imports. */
    obj(): Record<string, string[]>;
    /** Imports that resolved to no file (npm packages are left out of the graph, not skipped). */
    warnings(): { skipped: string[] };
  }

  export default function madge(path: string, config?: MadgeConfig): Promise<MadgeResult>;
}
