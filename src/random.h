/*
 * random.h
 *		Uniform draws from a strong source (random.c).
 */
#ifndef KEANON_RANDOM_H
#define KEANON_RANDOM_H

extern uint64 KeanonRandomBelow(uint64 n);

#endif							/* KEANON_RANDOM_H */
