import { describe, expect, it } from 'vitest';
import { ToolReceiptsError } from '../../src/core/errors.js';
import { ArgumentConflictError, assertUniqueToolNames, DuplicateToolNameError } from '../../src/repair/index.js';

describe('assertUniqueToolNames', () => {
  it('accepts distinct names, including ones differing only in case', () => {
    expect(() => assertUniqueToolNames([{ name: 'read' }, { name: 'Read' }, { name: 'write' }])).not.toThrow();
    expect(() => assertUniqueToolNames([])).not.toThrow();
  });

  it('names the duplicate and how often it occurs', () => {
    let caught: unknown;
    try {
      assertUniqueToolNames([{ name: 'read' }, { name: 'write' }, { name: 'read' }, { name: 'read' }]);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(DuplicateToolNameError);
    expect(caught).toBeInstanceOf(ToolReceiptsError);
    const error = caught as DuplicateToolNameError;
    expect(error.code).toBe('tool.duplicate_name');
    expect(error.toolName).toBe('read');
    expect(error.count).toBe(3);
    expect(error.message).toContain('"read"');
    expect(error.name).toBe('DuplicateToolNameError');
  });
});

describe('ArgumentConflictError', () => {
  it('carries a stable code and marks the failure as never started', () => {
    const error = new ArgumentConflictError('fetch', 'baseUrl', ['baseUrl', 'url']);
    expect(error).toBeInstanceOf(ToolReceiptsError);
    expect(error.code).toBe('tool_args.alias_conflict');
    expect(error.neverStarted).toBe(true);
    expect(error.message).toContain('"url"');
  });
});
