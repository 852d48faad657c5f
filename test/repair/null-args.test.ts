import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { dropNullDefaultedArgs } from '../../src/repair/index.js';

const schema = z.object({
  command: z.string(),
  cwd: z.string().optional(),
  timeout: z.number().default(30),
  note: z.string().nullable().optional(),
  anything: z.unknown(),
});

describe('dropNullDefaultedArgs', () => {
  it('drops null for optional and defaulted parameters', () => {
    expect(dropNullDefaultedArgs({ command: 'ls', cwd: null, timeout: null }, schema)).toEqual({ command: 'ls' });
  });

  it('keeps null for a required parameter, which then fails validation', () => {
    const args = dropNullDefaultedArgs({ command: null, cwd: null }, schema);
    expect(args).toEqual({ command: null });
    expect(schema.safeParse(args).success).toBe(false);
  });

  it('keeps null where the parameter accepts null as a value', () => {
    expect(dropNullDefaultedArgs({ command: 'ls', note: null, anything: null }, schema)).toEqual({
      command: 'ls',
      note: null,
      anything: null,
    });
  });

  it('keeps undeclared keys and non-null values, and does not mutate', () => {
    const args = { command: 'ls', extra: null, cwd: '/tmp' };
    expect(dropNullDefaultedArgs(args, schema)).toEqual(args);
    expect(dropNullDefaultedArgs(args, schema)).not.toBe(args);
    expect(args).toEqual({ command: 'ls', extra: null, cwd: '/tmp' });
  });

  it('looks through wrappers and transforms around the object schema', () => {
    const wrapped = schema.transform((v) => v).optional();
    expect(dropNullDefaultedArgs({ command: 'ls', cwd: null }, wrapped)).toEqual({ command: 'ls' });
  });

  it('drops nothing when the schema is not an object schema', () => {
    expect(dropNullDefaultedArgs({ a: null }, z.record(z.string(), z.string().optional()))).toEqual({ a: null });
  });
});
