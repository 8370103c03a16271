/* SPDX-License-Identifier: MIT */
/*
 * samples.h - one valid payload of every message type, built with proto's encoders.
 * Shared by the unit tests, the fuzz corpus generator and the benchmark.
 */
#ifndef SMP_SAMPLES_H
#define SMP_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

extern const uint8_t smp_sample_types[];
extern const size_t smp_sample_nr_types;

/* Write a valid payload of @type into @buf; @variant varies sizes and contents.
 * Returns its size (> 0), or a negative errno. */
long smp_sample_payload(uint8_t type, unsigned variant, uint8_t *buf, size_t cap);

#endif
