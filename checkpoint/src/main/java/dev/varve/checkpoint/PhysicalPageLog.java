package dev.varve.checkpoint;

import dev.varve.core.memory.Frame;
import dev.varve.core.memory.PageWriteHook;
import dev.varve.core.page.Page;
import dev.varve.core.spi.LoggedValue;
import dev.varve.core.spi.RecordTypes;
import dev.varve.core.wal.Wal;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.function.ToLongFunction;

/**
 * {@code WAL_PHYSICAL} mode's torn-page protection: the first change of a page after a checkpoint mark logs the
 * page's full image; later changes log the byte ranges they changed (found by comparing with a copy taken before
 * the change). Like PostgreSQL's {@code full_page_writes}, and like its images an image leaves out the page's unused
 * middle (PostgreSQL's "hole"). A change that moves cells (a split, a compaction) is logged as a {@link PageRebuild}
 * when that is smaller: copies from the page's own state before it, or for a split's new page from the full page's;
 * else as the image when that is smaller than the ranges. An insert or an update is logged as a rebuild too when that
 * is smaller: its slot array's moved slots a copy, and the value it wrote a copy from the logical record that holds it
 * ({@link LoggedValue}), so a put's value is in the WAL once. Replay gets the same page from any of them.
 *
 * <p>The generation moves on at each mark, under the checkpoint write lock; writers read it under the read lock,
 * which orders the two. Each writer thread keeps a few before-image buffers, one per page it holds write-latched
 * at once (a B+tree split holds up to three).
 */
final class PhysicalPageLog implements PageWriteHook {
    private static final int MAX_HELD = 16;
    /** Deltas up to this size are an insert's or a remove's: no cells moved, so a rebuild with a page index is not tried. */
    private static final int REBUILD_ABOVE = 512;
    /** Smaller deltas have too few shifted or logged bytes to gain from {@link PageRebuild#fromDelta}. */
    private static final int SHIFTED_ABOVE = 96;
    private final Wal wal;
    private final int pageSize;
    private final ToLongFunction<Page> unusedRange;
    private final PageCodec codec;
    private final ThreadLocal<Scratch> scratch;
    private volatile boolean enabled;
    private long generation;

    /**
     * A log into {@code wal}; {@code unusedRange} gives a page's unused middle, as {@code PageLayout.unusedRange};
     * {@code codec} says how images are written ({@link PhysicalRecords#encodeImage}).
     */
    PhysicalPageLog(Wal wal, int pageSize, ToLongFunction<Page> unusedRange, PageCodec codec) {
        this.wal = wal;
        this.pageSize = pageSize;
        this.unusedRange = unusedRange;
        this.codec = codec;
        this.scratch = ThreadLocal.withInitial(() -> new Scratch(pageSize));
    }

    /** Starts (or stops) logging; off during recovery, whose changes are covered by the checkpoint after it. */
    void enabled(boolean on) {
        enabled = on;
    }

    boolean enabled() {
        return enabled;
    }

    /** Called at each checkpoint mark, under the checkpoint write lock. */
    void nextGeneration() {
        generation++;
    }

    @Override
    public void beforeChange(Frame page, boolean fresh) {
        if (!enabled) return;
        Scratch s = scratch.get();
        int i = s.open(page);
        s.fresh[i] = fresh;
        if (fresh || page.physicalImageGeneration() != generation) {
            s.fullImage[i] = true;
        } else {
            s.fullImage[i] = false;
            page.copyTo(s.before[i], 0);
            s.usedBefore[i] = (int) (unusedRange.applyAsLong(page) >>> 32);
        }
    }

    @Override
    public void afterChange(Frame page) {
        if (!enabled) return;
        Scratch s = scratch.get();
        int i = s.find(page);
        if (i < 0) return; // latched before logging was enabled
        try {
            long unused = unusedRange.applyAsLong(page);
            int imageBytes = PhysicalRecords.imageBytes(page, unused);
            if (s.fullImage[i]) {
                ByteBuffer rebuilt = s.fresh[i] ? rebuildFromOthers(s, i, page, imageBytes) : null;
                if (rebuilt != null) wal.append(RecordTypes.PAGE_REBUILD, rebuilt);
                else appendImage(page, unused, s);
                page.physicalImageGeneration(generation);
                return;
            }
            ByteBuffer delta = PhysicalRecords.encodeDelta(page, s.viewOf(page.buffer()), s.before[i], s.out);
            if (delta == null) return;
            int bytes = delta.remaining();
            int limit = Math.min(bytes, imageBytes) - 1;
            int usedAfter = (int) (unused >>> 32);
            int shift = usedAfter == 0 || s.usedBefore[i] == 0 ? 0 : usedAfter - s.usedBefore[i]; // how far the slot array grew (or shrank)
            LoggedValue value = LoggedValue.current();
            ByteBuffer rebuilt = bytes > SHIFTED_ABOVE && (shift != 0 || value.active())
                    ? PageRebuild.fromDelta(delta, page, s.before[i], shift, shift == 0 ? 0 : Math.max(s.usedBefore[i], usedAfter), value, s.alt, limit)
                    : null;
            if (bytes > REBUILD_ABOVE && (rebuilt == null || rebuilt.remaining() > REBUILD_ABOVE)) {
                // cells moved, perhaps: copies from anywhere in the page may do better (indexing the page costs more
                // than all the rest, so not when the shifts and the logged value already made the record small)
                ByteBuffer full = s.rebuild.encode(page, s.before[i], page.pageId(), s.before[i], rebuilt == null ? s.alt : s.third,
                        rebuilt == null ? limit : rebuilt.remaining() - 1);
                if (full != null) rebuilt = full;
            }
            if (rebuilt != null) wal.append(RecordTypes.PAGE_REBUILD, rebuilt);
            else if (bytes <= imageBytes) wal.append(RecordTypes.PAGE_DELTA, delta);
            else appendImage(page, unused, s);
        } finally {
            s.close(i);
        }
    }

    private void appendImage(Frame page, long unused, Scratch s) {
        int type = PhysicalRecords.encodeImage(page, unused, codec, s.out, s.alt);
        wal.append(type, s.out);
    }

    /**
     * The smallest rebuild of the fresh page {@code i} from another page of its type that the thread holds and whose
     * state replay knows (logged since the mark, so not about to be imaged), if smaller than {@code limit}; else
     * null. Only a page of the same type can have given it its cells (a split); an overflow page written under a
     * held leaf is not tried.
     */
    private static ByteBuffer rebuildFromOthers(Scratch s, int i, Frame page, int limit) {
        ByteBuffer best = null;
        for (int j = 0; j < MAX_HELD; j++) {
            if (j == i || s.held[j] == null || s.fullImage[j] || s.held[j].type() != page.type()) continue;
            ByteBuffer out = best == s.out ? s.alt : s.out;
            ByteBuffer r = s.rebuild.encode(page, null, s.held[j].pageId(), s.before[j], out, best == null ? limit - 1 : best.remaining() - 1);
            if (r != null) best = r;
        }
        return best;
    }

    /** Per-thread before-images of the pages the thread holds write-latched. */
    private static final class Scratch {
        final Frame[] held = new Frame[MAX_HELD];
        final ByteBuffer[] before = new ByteBuffer[MAX_HELD];
        final boolean[] fullImage = new boolean[MAX_HELD];
        final boolean[] fresh = new boolean[MAX_HELD];
        /** Where the page's unused middle started before the change (0: it had none). */
        final int[] usedBefore = new int[MAX_HELD];
        /** Three record buffers, so that three encodings of one change can be compared. */
        final ByteBuffer out;
        final ByteBuffer alt;
        final ByteBuffer third;
        final PageRebuild rebuild;
        final int pageSize;
        /** Page memory's chunk buffers a thread keeps a view of (a chunk is 256 MiB: a 4 GiB region is 16). */
        private static final int VIEWS = 16;
        private final ByteBuffer[] viewed = new ByteBuffer[VIEWS];
        private final ByteBuffer[] views = new ByteBuffer[VIEWS];
        private int nextView;

        Scratch(int pageSize) {
            this.pageSize = pageSize;
            this.out = ByteBuffer.allocateDirect(pageSize * 2 + 64).order(ByteOrder.LITTLE_ENDIAN);
            this.alt = ByteBuffer.allocateDirect(pageSize * 2 + 64).order(ByteOrder.LITTLE_ENDIAN);
            this.third = ByteBuffer.allocateDirect(pageSize * 2 + 64).order(ByteOrder.LITTLE_ENDIAN);
            this.rebuild = new PageRebuild(pageSize);
        }

        int open(Frame f) {
            for (int i = 0; i < MAX_HELD; i++) {
                if (held[i] == null) {
                    held[i] = f;
                    if (before[i] == null) before[i] = ByteBuffer.allocateDirect(pageSize).order(ByteOrder.LITTLE_ENDIAN);
                    return i;
                }
            }
            throw new IllegalStateException("more than " + MAX_HELD + " pages write-latched by one thread");
        }

        /**
         * A view of {@code region} (one of page memory's chunk buffers) that only this thread moves, made once per
         * chunk rather than per change; past {@link #VIEWS} chunks, one is made again now and then.
         */
        ByteBuffer viewOf(ByteBuffer region) {
            for (int k = 0; k < VIEWS; k++) if (viewed[k] == region) return views[k];
            int k = nextView++ % VIEWS;
            viewed[k] = region;
            views[k] = region.duplicate();
            return views[k];
        }

        int find(Frame f) {
            for (int i = 0; i < MAX_HELD; i++) if (held[i] == f) return i;
            return -1;
        }

        void close(int i) {
            held[i] = null;
        }
    }
}
