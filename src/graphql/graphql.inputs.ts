import {
  getNullableType,
  getOperationAST,
  isInputObjectType,
  isListType,
  Kind,
  TypeInfo,
  typeFromAST,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type GraphQLInputType,
  type GraphQLSchema,
} from 'graphql';
import { AppError, type ErrorDetails } from '../common/errors';
import { checkText, textProblem, type TextReport } from '../common/text';

/**
 * One rule for every input of an operation, whatever carries it (GraphQL over HTTP or websockets,
 * and REST, whose routes run GraphQL documents), checked before it runs:
 *
 * - no string holds NUL or a lone surrogate (common/text.ts), at any depth, JSON values included;
 * - a list input is given a list: GraphQL would take a single value as a list of one, which made
 *   REST routes differ (`"tags": "x"`); the strict rule holds everywhere.
 *
 * Answers a VALIDATION_FAILED error naming each field (its path below the argument or variable;
 * the conventional `input.` wrapper left out), or null.
 */
export function inputProblems(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown> | null | undefined,
): AppError | null {
  const details: ErrorDetails = { ...literalProblems(schema, document) };
  const report = reporter(details);
  const operation = getOperationAST(document, operationName ?? undefined);
  for (const definition of operation?.variableDefinitions ?? []) {
    const name = definition.variable.name.value;
    const type = typeFromAST(schema, definition.type) as GraphQLInputType | undefined;
    if (type && variables && name in variables) checkValue(variables[name], type, [name], report);
  }
  return Object.keys(details).length ? AppError.validation(details) : null;
}

/** Problems of the values written into a document, found once per document (servers reuse them). */
const literalsChecked = new WeakMap<DocumentNode, ErrorDetails>();
function literalProblems(schema: GraphQLSchema, document: DocumentNode): ErrorDetails {
  let details = literalsChecked.get(document);
  if (!details) {
    details = {};
    checkLiterals(schema, document, reporter(details));
    literalsChecked.set(document, details);
  }
  return details;
}

function reporter(details: ErrorDetails): Report {
  return (path, problem) => {
    const name = (path[0] === 'input' && path.length > 1 ? path.slice(1) : path).join('.');
    details[name || 'input'] ??= problem;
  };
}

type Report = TextReport;

/** A variable's value against its declared type. */
function checkValue(value: unknown, type: GraphQLInputType, path: (string | number)[], report: Report): void {
  if (value === null || value === undefined) return;
  const nullable = getNullableType(type);
  if (isListType(nullable)) {
    if (!Array.isArray(value)) return report(path, 'must be a list');
    value.forEach((item, i) => checkValue(item, nullable.ofType, [...path, i], report));
    return;
  }
  if (isInputObjectType(nullable) && typeof value === 'object' && !Array.isArray(value)) {
    const fields = nullable.getFields();
    for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
      if (Object.hasOwn(fields, key)) checkValue(v, fields[key].type, [...path, key], report);
      else checkText(v, [...path, key], report);
    }
    return;
  }
  checkText(value, path, report);
}

/** Values written into the document: the same rules, with the argument and field names as path. */
function checkLiterals(schema: GraphQLSchema, document: DocumentNode, report: Report): void {
  const typeInfo = new TypeInfo(schema);
  const path: string[] = [];
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Argument: { enter: (node) => void path.push(node.name.value), leave: () => void path.pop() },
      ObjectField: { enter: (node) => void path.push(node.name.value), leave: () => void path.pop() },
      VariableDefinition: {
        enter: (node) => void path.push(node.variable.name.value),
        leave: () => void path.pop(),
      },
      enter(node) {
        if (node.kind === Kind.STRING) {
          const problem = textProblem(node.value);
          if (problem) report(path, problem);
        }
        const expected = typeInfo.getInputType();
        if (
          expected &&
          isListType(getNullableType(expected)) &&
          (node.kind === Kind.STRING ||
            node.kind === Kind.INT ||
            node.kind === Kind.FLOAT ||
            node.kind === Kind.BOOLEAN ||
            node.kind === Kind.ENUM ||
            node.kind === Kind.OBJECT)
        )
          report(path, 'must be a list');
      },
    }),
  );
}
