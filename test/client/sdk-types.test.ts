/**
 * Compile-time checks against the real SDKs' types (devDependencies): what
 * each SDK returns is accepted by our readers, and what our writers return is
 * accepted by the SDK as the next message. `npm run typecheck` fails if a
 * shape drifts; the one runtime assertion keeps vitest from reporting an
 * empty file.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import type { ModelMessage, ToolCallPart, ToolSet, generateText } from 'ai';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  aiSdkToolCalls,
  aiSdkToolMessage,
  aiSdkTools,
  anthropicToolCalls,
  anthropicToolResultMessage,
  openAIChatToolCalls,
  openAIChatToolMessages,
  openAIResponsesToolCalls,
  openAIResponsesToolOutputs,
} from '../../src/client/index.js';

describe('types against the real SDKs', () => {
  it('Anthropic: a Message is read, the result message is a MessageParam', () => {
    expectTypeOf<Anthropic.Message>().toExtend<Parameters<typeof anthropicToolCalls>[0]>();
    expectTypeOf<Anthropic.MessageParam>().toExtend<Parameters<typeof anthropicToolCalls>[0]>();
    expectTypeOf<ReturnType<typeof anthropicToolResultMessage>>().toExtend<Anthropic.MessageParam>();
    expectTypeOf<ReturnType<typeof anthropicToolResultMessage>['content'][number]>().toExtend<Anthropic.ToolResultBlockParam>();
    expect(anthropicToolCalls({ content: 'no tools' }).entries).toEqual([]);
  });

  it('OpenAI Chat: a ChatCompletionMessage is read, tool messages are ChatCompletionMessageParams', () => {
    expectTypeOf<OpenAI.Chat.ChatCompletionMessage>().toExtend<Parameters<typeof openAIChatToolCalls>[0]>();
    expectTypeOf<OpenAI.Chat.ChatCompletionAssistantMessageParam>().toExtend<Parameters<typeof openAIChatToolCalls>[0]>();
    expectTypeOf<ReturnType<typeof openAIChatToolMessages>[number]>().toExtend<OpenAI.Chat.ChatCompletionToolMessageParam>();
    expectTypeOf<ReturnType<typeof openAIChatToolMessages>>().toExtend<OpenAI.Chat.ChatCompletionMessageParam[]>();
  });

  it('OpenAI Responses: a Response and its output are read, outputs are ResponseInputItems', () => {
    expectTypeOf<OpenAI.Responses.Response>().toExtend<Parameters<typeof openAIResponsesToolCalls>[0]>();
    expectTypeOf<OpenAI.Responses.ResponseOutputItem[]>().toExtend<Parameters<typeof openAIResponsesToolCalls>[0]>();
    expectTypeOf<ReturnType<typeof openAIResponsesToolOutputs>>().toExtend<OpenAI.Responses.ResponseInputItem[]>();
  });

  it('AI SDK: tool-call parts are read, the tool message is a ModelMessage, the tools are a ToolSet', () => {
    expectTypeOf<ToolCallPart[]>().toExtend<Parameters<typeof aiSdkToolCalls>[0]>();
    type GenerateResult = Awaited<ReturnType<typeof generateText<ToolSet>>>;
    expectTypeOf<GenerateResult['toolCalls']>().toExtend<Parameters<typeof aiSdkToolCalls>[0]>();
    expectTypeOf<GenerateResult['response']['messages'][number]>().toExtend<Parameters<typeof aiSdkToolCalls>[0]>();
    expectTypeOf<ReturnType<typeof aiSdkToolMessage>>().toExtend<ModelMessage>();
    expectTypeOf<ReturnType<typeof aiSdkTools>>().toExtend<ToolSet>();
  });
});
