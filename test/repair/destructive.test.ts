import { describe, expect, it } from 'vitest';
import { destructiveMatcher } from '../../src/repair/index.js';

describe('destructiveMatcher', () => {
  it('matches whole names regardless of case', () => {
    const isDestructive = destructiveMatcher(['Bash', 'delete_file']);
    expect(isDestructive('bash')).toBe(true);
    expect(isDestructive('BASH')).toBe(true);
    expect(isDestructive('Delete_File')).toBe(true);
    expect(isDestructive('BashOutput')).toBe(false);
    expect(isDestructive('delete')).toBe(false);
  });

  it('never matches a substring', () => {
    const isDestructive = destructiveMatcher(['push', 'reset']);
    expect(isDestructive('PushNotification')).toBe(false);
    expect(isDestructive('ResetZoom')).toBe(false);
    expect(isDestructive('git_push')).toBe(false);
    expect(isDestructive('push')).toBe(true);
  });

  it('treats a trailing star as a deliberate prefix', () => {
    const isDestructive = destructiveMatcher(['git_*']);
    expect(isDestructive('git_push')).toBe(true);
    expect(isDestructive('GIT_RESET')).toBe(true);
    expect(isDestructive('git_')).toBe(true);
    expect(isDestructive('git')).toBe(false);
    expect(isDestructive('my_git_push')).toBe(false);
  });

  it('treats a star anywhere else as an ordinary character', () => {
    const isDestructive = destructiveMatcher(['*_delete', 'a*b']);
    expect(isDestructive('file_delete')).toBe(false);
    expect(isDestructive('*_delete')).toBe(true);
    expect(isDestructive('axxb')).toBe(false);
    expect(isDestructive('a*b')).toBe(true);
  });

  it('matches nothing without patterns, everything with a lone star', () => {
    expect(destructiveMatcher([])('anything')).toBe(false);
    expect(destructiveMatcher(['*'])('anything')).toBe(true);
  });
});
