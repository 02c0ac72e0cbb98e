/**
 * The defines field ("N=1024 USE_FAST=1 TILE=(16*2)") -> CompileOptions.defines,
 * checked against the same rules the server applies, so a typo is reported
 * next to the field instead of as a 422.
 */

const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const VALUE = /^[A-Za-z0-9_.+\-*/() ]{0,64}$/;

/** The server's limit on the number of defines. */
export const MAX_DEFINES = 32;

export interface ParsedDefines {
  defines: Record<string, string>;
  /** One message per problem; empty when the text is valid. */
  errors: string[];
}

/** Split on blanks, keeping "double quoted" values (which may hold blanks) together. */
function tokens(text: string): string[] {
  const out: string[] = [];
  const pattern = /([^\s"]+)?"([^"]*)"|\S+/g;
  let match: RegExpExecArray | null;
  while ((match = pattern.exec(text)) !== null) {
    out.push(match[2] !== undefined ? `${match[1] ?? ''}${match[2]}` : match[0]);
  }
  return out;
}

/**
 * Parse "A=1 B=2": `NAME` alone means NAME=1 (as -DNAME does), quoted values may
 * hold blanks (`E="1 + 2"`), and a later NAME replaces an earlier one.
 */
export function parseDefines(text: string): ParsedDefines {
  const defines: Record<string, string> = {};
  const errors: string[] = [];
  for (const token of tokens(text)) {
    const eq = token.indexOf('=');
    const name = eq < 0 ? token : token.slice(0, eq);
    const value = eq < 0 ? '1' : token.slice(eq + 1);
    if (!NAME.test(name)) {
      errors.push(`"${name}" is not a C identifier`);
      continue;
    }
    if (!VALUE.test(value)) {
      errors.push(`${name}: the value may hold letters, digits, blanks and _ . + - * / ( ) (64 at most)`);
      continue;
    }
    defines[name] = value;
  }
  if (Object.keys(defines).length > MAX_DEFINES) {
    errors.push(`at most ${MAX_DEFINES} defines`);
  }
  return { defines, errors };
}
