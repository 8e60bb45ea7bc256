package dev.varve.core.page;

import dev.varve.config.ConfigLimits;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * One page of memory: a fixed-size window at {@code base} into a direct {@link ByteBuffer}, with typed accessors
 * (VarHandle views, little-endian) and a reader/writer latch. Page memory hands out subclasses bound to its slots;
 * the snapshot layer hands out pages over archived copies. All offsets are relative to the start of the page.
 *
 * <p>Design note: the latch is a single int (0 free, n &gt; 0 readers, -1 one writer) changed by CAS, because
 * latches are held for the few microseconds of one page access and a lock object per page would cost more heap than
 * the page table itself. Waiters spin briefly, then yield.
 */
public class Page {
    private static final VarHandle SHORT = MethodHandles.byteBufferViewVarHandle(short[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle INT = MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle LONG = MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    /** Big-endian views compare eight key bytes at a time in unsigned lexicographic order. */
    private static final VarHandle LONG_BE = MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
    private static final VarHandle ARRAY_LONG_BE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
    private static final VarHandle LATCH;
    /** Source of {@link #zero}: never written (the bulk put reads it at absolute offsets, so threads share it). */
    private static final ByteBuffer ZEROS = ByteBuffer.allocateDirect(ConfigLimits.PAGE_SIZE_MAX).asReadOnlyBuffer();

    static {
        try {
            LATCH = MethodHandles.lookup().findVarHandle(Page.class, "latch", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * Chunks a page is divided into for change tracking, one bit each of {@link #changed}: 8 bytes of a 4 KiB page, so
     * the snapshot layer archives a put of a 100-byte value as about a hundred bytes, not the 64-byte chunks around it.
     */
    public static final int CHUNKS = 512;
    /** Longs of a change mask: bit i of the mask is bit (i % 64) of long i / 64. */
    public static final int MASK_LONGS = CHUNKS / Long.SIZE;

    private final ByteBuffer buffer;
    private final int base;
    private final int size;
    /** log2 of the chunk size (size / {@link #CHUNKS} bytes). */
    private final int chunkShift;
    /**
     * The chunks written since {@link #takeChanged} last cleared them: bit i set when a byte of [i * chunk, (i + 1) *
     * chunk) may have changed. Every write goes through this class, so the snapshot layer can archive a page's
     * pre-state as the chunks that changed since its previous capture. Null for every chunk (not tracked: a new or
     * loaded page, old contents unknown), where marking more changes nothing: a mask is allocated only when a capture
     * takes one, so the pages of a store without snapshots, and pages loaded since their last capture, hold none.
     * Guarded by the write latch.
     */
    private long[] changed;
    @SuppressWarnings("unused") // accessed through LATCH
    private volatile int latch;

    /** A page over {@code size} bytes of {@code buffer} starting at {@code base}. */
    public Page(ByteBuffer buffer, int base, int size) {
        if (!buffer.isDirect()) throw new IllegalArgumentException("pages live off-heap: buffer must be direct");
        if (base < 0 || size <= 0 || base + size > buffer.capacity())
            throw new IllegalArgumentException("page window [" + base + ", " + (base + size) + ") outside buffer of " + buffer.capacity());
        if (Integer.bitCount(size) != 1 || size < CHUNKS) throw new IllegalArgumentException("page size must be a power of two of at least " + CHUNKS + ", was " + size);
        this.buffer = buffer;
        this.base = base;
        this.size = size;
        this.chunkShift = Integer.numberOfTrailingZeros(size / CHUNKS);
    }

    /** Page size in bytes. */
    public final int size() {
        return size;
    }

    /** The backing buffer (shared with other pages); use with {@link #base()}. */
    public final ByteBuffer buffer() {
        return buffer;
    }

    /** Offset of this page in {@link #buffer()}. */
    public final int base() {
        return base;
    }

    // ---- header fields ----

    /** The page id stored in the header. */
    public final long pageId() {
        return getLong(PageHeader.PAGE_ID_OFFSET);
    }

    /** The page type stored in the header. */
    public final int type() {
        return getShort(PageHeader.TYPE_OFFSET);
    }

    /** Sets the page type. */
    public final void type(int type) {
        putShort(PageHeader.TYPE_OFFSET, type);
    }

    // ---- change tracking ----

    /** Bytes per tracked chunk: the page size / {@link #CHUNKS}. */
    public final int chunkBytes() {
        return 1 << chunkShift;
    }

    /**
     * The chunks changed since the last call, a mask of {@link #MASK_LONGS} longs (bit i: chunk i), and starts tracking
     * afresh. Caller holds the write latch.
     */
    public final long[] takeChanged() {
        long[] c = changed == null ? allChanged() : changed;
        changed = new long[MASK_LONGS];
        return c;
    }

    /** Forgets what changed: the next {@link #takeChanged} reports every chunk (the page was loaded or written around this class). */
    public final void changedWholly() {
        changed = null;
    }

    /** A mask of every chunk: what a page whose changes were not tracked (loaded, or its old contents unknown) reports. */
    public static long[] allChanged() {
        long[] mask = new long[MASK_LONGS];
        Arrays.fill(mask, -1L);
        return mask;
    }

    /** Whether {@code mask} has every chunk. */
    public static boolean isAllChanged(long[] mask) {
        for (long m : mask) if (m != -1L) return false;
        return true;
    }

    // ---- typed access; plain memory semantics, the latch orders them ----

    private int at(int offset, int width) {
        assert offset >= 0 && offset + width <= size : "offset " + offset + "+" + width + " outside page of " + size;
        return base + offset;
    }

    /** {@link #at} for a write: also marks the chunks [offset, offset + width) touches as changed. */
    private int written(int offset, int width) {
        int p = at(offset, width);
        if (changed == null || width <= 0) return p; // every chunk counts as changed already
        int first = offset >>> chunkShift;
        int last = (offset + width - 1) >>> chunkShift;
        int word = first >>> 6;
        if (word == last >>> 6) changed[word] |= (-1L >>> (Long.SIZE - 1 - last + first)) << first; // shifts count mod 64
        else markSpan(first, last);
        return p;
    }

    /** Marks chunks [first, last] changed, across longs of the mask. */
    private void markSpan(int first, int last) {
        int word = first >>> 6;
        int lastWord = last >>> 6;
        changed[word] |= -1L << first;
        for (int w = word + 1; w < lastWord; w++) changed[w] = -1L;
        changed[lastWord] |= -1L >>> (Long.SIZE - 1 - (last & 63));
    }

    /** Unsigned 8-bit value. */
    public final int getByte(int offset) {
        return buffer.get(at(offset, 1)) & 0xFF;
    }

    /** Stores the low 8 bits. */
    public final void putByte(int offset, int value) {
        buffer.put(written(offset, 1), (byte) value);
    }

    /** Unsigned 16-bit value. */
    public final int getShort(int offset) {
        return (short) SHORT.get(buffer, at(offset, 2)) & 0xFFFF;
    }

    /** Stores the low 16 bits. */
    public final void putShort(int offset, int value) {
        SHORT.set(buffer, written(offset, 2), (short) value);
    }

    /** 32-bit value. */
    public final int getInt(int offset) {
        return (int) INT.get(buffer, at(offset, 4));
    }

    /** Stores a 32-bit value. */
    public final void putInt(int offset, int value) {
        INT.set(buffer, written(offset, 4), value);
    }

    /** 64-bit value. */
    public final long getLong(int offset) {
        return (long) LONG.get(buffer, at(offset, 8));
    }

    /** Stores a 64-bit value. */
    public final void putLong(int offset, long value) {
        LONG.set(buffer, written(offset, 8), value);
    }

    /** Copies {@code length} bytes at {@code offset} into {@code dst}. */
    public final void getBytes(int offset, byte[] dst, int dstOffset, int length) {
        buffer.get(at(offset, length), dst, dstOffset, length);
    }

    /** A new array with {@code length} bytes at {@code offset}. */
    public final byte[] getBytes(int offset, int length) {
        byte[] b = new byte[length];
        getBytes(offset, b, 0, length);
        return b;
    }

    /** Copies {@code length} bytes of {@code src} to {@code offset}. */
    public final void putBytes(int offset, byte[] src, int srcOffset, int length) {
        if (length == 0) return;
        buffer.put(written(offset, length), src, srcOffset, length);
    }

    /** Copies {@code length} bytes of {@code src} at {@code srcOffset} to {@code offset} (cells moving between pages, redo). */
    public final void putBytes(int offset, ByteBuffer src, int srcOffset, int length) {
        if (length == 0) return;
        buffer.put(written(offset, length), src, srcOffset, length);
    }

    /** Moves bytes inside this page; the ranges may overlap (memmove). */
    public final void move(int from, int to, int length) {
        if (length == 0) return;
        buffer.put(written(to, length), buffer, at(from, length), length);
    }

    /**
     * Zeroes {@code length} bytes at {@code offset}: one bulk copy from a page of zeros (a fresh page zeroed word by
     * word took 14% of a writer's samples when every put allocated an overflow page).
     */
    public final void zero(int offset, int length) {
        if (length == 0) return;
        int p = written(offset, length);
        for (int n; length > 0; p += n, length -= n) {
            n = Math.min(length, ZEROS.capacity());
            buffer.put(p, ZEROS, 0, n);
        }
    }

    /** Copies this whole page into {@code dst} (same size). */
    public final void copyTo(Page dst) {
        if (dst.size != size) throw new IllegalArgumentException("page sizes differ: " + size + " vs " + dst.size);
        dst.buffer.put(dst.base, buffer, base, size);
        dst.changedWholly();
    }

    /** Copies this whole page into {@code dst} at {@code dstOffset}. */
    public final void copyTo(ByteBuffer dst, int dstOffset) {
        dst.put(dstOffset, buffer, base, size);
    }

    /** Overwrites this whole page with {@code size()} bytes of {@code src} at {@code srcOffset}. */
    public final void copyFrom(ByteBuffer src, int srcOffset) {
        buffer.put(base, src, srcOffset, size);
        changedWholly();
    }

    /**
     * Compares {@code length} bytes at {@code offset} with {@code key} in unsigned lexicographic order (shorter
     * prefix first), like {@link java.util.Arrays#compareUnsigned(byte[], byte[])}.
     */
    public final int compareBytes(int offset, int length, byte[] key) {
        int n = Math.min(length, key.length);
        int p = at(offset, length);
        int i = 0;
        for (; i + 8 <= n; i += 8) {
            long a = (long) LONG_BE.get(buffer, p + i);
            long b = (long) ARRAY_LONG_BE.get(key, i);
            if (a != b) return Long.compareUnsigned(a, b);
        }
        for (; i < n; i++) {
            int a = buffer.get(p + i) & 0xFF;
            int b = key[i] & 0xFF;
            if (a != b) return a - b;
        }
        return Integer.compare(length, key.length);
    }

    // ---- latch ----

    /** Takes the latch shared; many readers may hold it. */
    public final void latchRead() {
        for (int spins = 0; ; spins++) {
            int s = (int) LATCH.getVolatile(this);
            if (s >= 0 && LATCH.compareAndSet(this, s, s + 1)) return;
            backoff(spins);
        }
    }

    /** Takes the latch shared unless a writer holds it; false (and nothing held) when one does. */
    public final boolean tryLatchRead() {
        for (int s; (s = (int) LATCH.getVolatile(this)) >= 0; ) {
            if (LATCH.compareAndSet(this, s, s + 1)) return true;
        }
        return false;
    }

    /** Releases a shared hold. */
    public final void unlatchRead() {
        int s = (int) LATCH.getAndAdd(this, -1);
        assert s > 0 : "read latch released but not held: " + s;
    }

    /** Takes the latch exclusively. */
    public final void latchWrite() {
        for (int spins = 0; !LATCH.compareAndSet(this, 0, -1); spins++) backoff(spins);
    }

    /** Releases the exclusive hold. */
    public final void unlatchWrite() {
        boolean released = LATCH.compareAndSet(this, -1, 0);
        assert released : "write latch released but not held";
    }

    private static void backoff(int spins) {
        if (spins < 64) Thread.onSpinWait();
        else Thread.yield();
    }
}
