/**
 * SQL built from parts: text with its values in place (`sql\`… ${value} …\``), so a statement
 * composed of parts from several modules never counts positional parameters. A value that is an
 * Sql itself is spliced in (its text and its values); `raw` text (a CTE's name) goes in as it is.
 */
export class Sql {
  private constructor(
    private readonly texts: readonly string[],
    private readonly values: readonly unknown[],
  ) {}

  static of(strings: readonly string[], values: readonly unknown[]): Sql {
    const texts = [strings[0]];
    const flat: unknown[] = [];
    values.forEach((value, i) => {
      if (value instanceof Sql) {
        texts[texts.length - 1] += value.texts[0];
        for (let k = 0; k < value.values.length; k++) {
          flat.push(value.values[k]);
          texts.push(value.texts[k + 1]);
        }
        texts[texts.length - 1] += strings[i + 1];
      } else {
        flat.push(value);
        texts.push(strings[i + 1]);
      }
    });
    return new Sql(texts, flat);
  }

  /** A part given as text with `?` placeholders and their values in order (older callers' parts). */
  static positional(text: string, params: readonly unknown[]): Sql {
    const texts = text.split('?');
    if (texts.length !== params.length + 1) throw new Error('placeholders and values differ in number');
    return new Sql(texts, [...params]);
  }

  /** The text with a `?` for each value, and the values in order (for queryRows and em.execute). */
  compile(): { text: string; params: unknown[] } {
    return { text: this.texts.join('?'), params: [...this.values] };
  }
}

export function sql(strings: TemplateStringsArray, ...values: unknown[]): Sql {
  return Sql.of(strings, values);
}

/** Text put in as it is: names (of CTEs, aliases), never a value from outside. */
export function raw(text: string): Sql {
  return Sql.of([text], []);
}

export const EMPTY = raw('');

/** The parts one after the other, `separator` between them. */
export function joinSql(parts: readonly Sql[], separator: string): Sql {
  if (!parts.length) return EMPTY;
  const strings = ['', ...parts.slice(1).map(() => separator), ''];
  return Sql.of(strings, parts);
}

/** A named part of a WITH: it may read the parts before it. */
export interface Cte {
  name: string;
  sql: Sql;
}

/**
 * What a module adds to another's statement: its CTEs, and the expressions the final select must
 * read (PostgreSQL runs a CTE that is a plain SELECT, such as one calling a function to enqueue a
 * task, only when something reads it; data-modifying CTEs always run).
 */
export interface StatementPart {
  ctes: readonly Cte[];
  reads?: readonly Sql[];
}

/** `with <ctes> <body>`: the CTEs in order (the body alone when there are none). */
export function withCtes(ctes: readonly Cte[], body: Sql): Sql {
  if (!ctes.length) return body;
  return sql`with ${joinSql(
    ctes.map((c) => sql`${raw(c.name)} as (${c.sql})`),
    ',\n       ',
  )}\n       ${body}`;
}

/** The CTEs of parts, in order. */
export const ctesOf = (parts: readonly StatementPart[]): Cte[] => parts.flatMap((p) => p.ctes);

/** `, <read>` for each read of the parts: appended to a final select's columns. */
export const readsOf = (parts: readonly StatementPart[]): Sql =>
  joinSql(
    parts.flatMap((p) => p.reads ?? []).map((r) => sql`, ${r}`),
    '',
  );
