package dev.varve.core.memory;

import java.util.Arrays;

/**
 * Page id → frame, striped: each stripe is an open-addressing table (linear probing, backward-shift delete) guarded
 * by its own monitor. Lookup and pin happen under the stripe's monitor, and so does eviction's removal, which is
 * what keeps a frame from being reused while someone is about to pin it.
 */
final class PageTable {
    private static final long EMPTY = Long.MIN_VALUE;
    private final Stripe[] stripes;
    private final int stripeMask;

    PageTable(int frames) {
        int n = Integer.highestOneBit(Math.max(16, Math.min(1024, frames / 64)));
        stripes = new Stripe[n];
        for (int i = 0; i < n; i++) stripes[i] = new Stripe(Math.max(16, 2 * frames / n));
        stripeMask = n - 1;
    }

    private static long mix(long id) {
        long h = id * 0x9E3779B97F4A7C15L;
        return h ^ (h >>> 29);
    }

    private Stripe stripe(long id) {
        return stripes[(int) (mix(id) >>> 40) & stripeMask];
    }

    /** The frame of {@code id}, pinned, or null. */
    Frame getAndPin(long id) {
        Stripe s = stripe(id);
        synchronized (s) {
            Frame f = s.get(id);
            if (f != null) f.pin();
            return f;
        }
    }

    /** Maps {@code id} to {@code f} unless it is already mapped; returns the existing frame pinned, or null. */
    Frame putIfAbsentOrPin(long id, Frame f) {
        Stripe s = stripe(id);
        synchronized (s) {
            Frame existing = s.get(id);
            if (existing != null) {
                existing.pin();
                return existing;
            }
            s.put(id, f);
            return null;
        }
    }

    /** Unmaps {@code id} if it maps to {@code f}. */
    void remove(long id, Frame f) {
        Stripe s = stripe(id);
        synchronized (s) {
            if (s.get(id) == f) s.remove(id);
        }
    }

    /**
     * Eviction's claim: unmaps {@code f} if it still holds {@code id}, is unpinned, clean and ready; moves it to
     * LOADING so nobody else claims it.
     */
    boolean claimForEviction(long id, Frame f) {
        Stripe s = stripe(id);
        synchronized (s) {
            if (f.pageId != id || f.pins() != 0 || f.held() || s.get(id) != f) return false;
            if (!f.casState(Frame.READY, Frame.LOADING)) return false;
            s.remove(id);
            return true;
        }
    }

    private static final class Stripe {
        long[] keys;
        Frame[] values;
        int size;

        Stripe(int capacity) {
            int c = Integer.highestOneBit(capacity - 1) << 1;
            keys = new long[c];
            values = new Frame[c];
            Arrays.fill(keys, EMPTY);
        }

        private int slot(long id) {
            return (int) mix(id) & (keys.length - 1);
        }

        Frame get(long id) {
            int mask = keys.length - 1;
            for (int i = slot(id); ; i = (i + 1) & mask) {
                long k = keys[i];
                if (k == id) return values[i];
                if (k == EMPTY) return null;
            }
        }

        void put(long id, Frame f) {
            if (2 * (size + 1) > keys.length) grow();
            int mask = keys.length - 1;
            int i = slot(id);
            while (keys[i] != EMPTY) i = (i + 1) & mask;
            keys[i] = id;
            values[i] = f;
            size++;
        }

        void remove(long id) {
            int mask = keys.length - 1;
            int i = slot(id);
            while (keys[i] != id) {
                if (keys[i] == EMPTY) return;
                i = (i + 1) & mask;
            }
            // backward-shift deletion keeps probe chains unbroken without tombstones
            int hole = i;
            for (int j = (hole + 1) & mask; keys[j] != EMPTY; j = (j + 1) & mask) {
                int home = slot(keys[j]);
                boolean movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
                if (movable) {
                    keys[hole] = keys[j];
                    values[hole] = values[j];
                    hole = j;
                }
            }
            keys[hole] = EMPTY;
            values[hole] = null;
            size--;
        }

        private void grow() {
            long[] oldKeys = keys;
            Frame[] oldValues = values;
            keys = new long[oldKeys.length * 2];
            values = new Frame[oldKeys.length * 2];
            Arrays.fill(keys, EMPTY);
            size = 0;
            for (int i = 0; i < oldKeys.length; i++) if (oldKeys[i] != EMPTY) put(oldKeys[i], oldValues[i]);
        }
    }
}
