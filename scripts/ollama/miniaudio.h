/*
 * Stand-in for miniaudio.h, which the Go module zip of Ollama lacks (it
 * lives in llama.cpp's vendor/ directory, outside the module). Ollama never
 * decodes audio on the text models art tests with, so every decoder call
 * fails: mtmd then treats the buffer as "not audio". Only the names
 * llama.cpp's mtmd-helper.cpp uses are declared.
 */
#ifndef ART_MINIAUDIO_STANDIN_H
#define ART_MINIAUDIO_STANDIN_H

#include <stddef.h>
#include <stdint.h>

typedef uint64_t ma_uint64;
typedef int ma_result;
#define MA_SUCCESS 0
#define MA_ERROR (-1)

typedef enum { ma_format_unknown = 0, ma_format_f32 = 5 } ma_format;
typedef enum { ma_encoding_format_wav = 1 } ma_encoding_format;

typedef struct { ma_format format; uint32_t channels; uint32_t sampleRate; } ma_decoder_config;
typedef struct { int unused; } ma_decoder;
typedef struct { int unused; } ma_encoder_config;
typedef struct { int unused; } ma_encoder;

static inline ma_decoder_config ma_decoder_config_init(ma_format f, uint32_t ch, uint32_t rate) {
	ma_decoder_config c;
	c.format = f;
	c.channels = ch;
	c.sampleRate = rate;
	return c;
}
static inline ma_result ma_decoder_init_memory(const void *b, size_t n, const ma_decoder_config *c, ma_decoder *d) {
	(void)b; (void)n; (void)c; (void)d;
	return MA_ERROR;
}
static inline ma_result ma_decoder_get_length_in_pcm_frames(ma_decoder *d, ma_uint64 *n) {
	(void)d; *n = 0;
	return MA_ERROR;
}
static inline ma_result ma_decoder_read_pcm_frames(ma_decoder *d, void *out, ma_uint64 n, ma_uint64 *read) {
	(void)d; (void)out; (void)n; *read = 0;
	return MA_ERROR;
}
static inline ma_result ma_decoder_uninit(ma_decoder *d) {
	(void)d;
	return MA_SUCCESS;
}

#endif
