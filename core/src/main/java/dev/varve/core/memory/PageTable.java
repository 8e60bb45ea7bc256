package dev.varve.core.memory;

import dev.varve.core.util.LongLongMap;

/**
 * Page id → frame, striped: each stripe maps page ids to frame slots ({@link LongLongMap}) and is guarded by its
 * own monitor. Lookup and pin happen under the stripe's monitor, and so does eviction's removal, which is
 * what keeps a frame from being reused while someone is about to pin it. A reader may also pin a frame past the
 * table ({@link ChildHints}); eviction therefore moves the frame's state on before it reads the pins, and gives the
 * frame back when it finds one.
 */
final class PageTable {
    private static final long MISSING = -1;
    private final Frame[] frames;
    private final LongLongMap[] stripes;
    private final int stripeMask;

    PageTable(Frame[] frames) {
        this.frames = frames;
        int n = Integer.highestOneBit(Math.max(16, Math.min(1024, frames.length / 64)));
        stripes = new LongLongMap[n];
        for (int i = 0; i < n; i++) stripes[i] = new LongLongMap(Math.max(16, frames.length / n));
        stripeMask = n - 1;
    }

    private static long mix(long id) {
        long h = id * 0x9E3779B97F4A7C15L;
        return h ^ (h >>> 29);
    }

    private LongLongMap stripe(long id) {
        return stripes[(int) (mix(id) >>> 40) & stripeMask];
    }

    private Frame get(LongLongMap s, long id) {
        long slot = s.get(id, MISSING);
        return slot == MISSING ? null : frames[(int) slot];
    }

    /** The frame of {@code id}, pinned, or null. */
    Frame getAndPin(long id) {
        LongLongMap s = stripe(id);
        synchronized (s) {
            Frame f = get(s, id);
            if (f != null) f.pin();
            return f;
        }
    }

    /** True when {@code id} is mapped to a frame (which may be loading or evicted the next moment). */
    boolean contains(long id) {
        LongLongMap s = stripe(id);
        synchronized (s) {
            return s.get(id, MISSING) != MISSING;
        }
    }

    /** Maps {@code id} to {@code f} unless it is already mapped; returns the existing frame pinned, or null. */
    Frame putIfAbsentOrPin(long id, Frame f) {
        LongLongMap s = stripe(id);
        synchronized (s) {
            Frame existing = get(s, id);
            if (existing != null) {
                existing.pin();
                return existing;
            }
            s.putIfAbsent(id, f.slot);
            return null;
        }
    }

    /** Unmaps {@code id} if it maps to {@code f}. */
    void remove(long id, Frame f) {
        LongLongMap s = stripe(id);
        synchronized (s) {
            if (get(s, id) == f) s.remove(id);
        }
    }

    /**
     * Eviction's claim: unmaps {@code f} if it still holds {@code id}, is unpinned, clean and ready; moves it to
     * LOADING so nobody else claims it.
     */
    boolean claimForEviction(long id, Frame f) {
        LongLongMap s = stripe(id);
        synchronized (s) {
            if (f.pageId != id || f.held() || get(s, id) != f) return false;
            if (!f.casState(Frame.READY, Frame.LOADING)) return false;
            f.claimed(); // before the frame can take another page, even if the pins below give it back
            // the pins are read after the state moved on: a reader pinning past this table (ChildHints) reads the state
            // after its pin, so either this sees its pin, or it sees LOADING and lets go
            if (f.pins() != 0) {
                f.state(Frame.READY);
                return false;
            }
            s.remove(id);
            return true;
        }
    }
}
