package dev.varve.core.store;

import dev.varve.core.io.Closeables;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.page.PageId;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.AccessDeniedException;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * One partition's page file: a header, then page {@code i} at {@code (i + 1) * pageSize}. Reads check the page's
 * CRC32C and its page id, so a flipped byte or a misdirected write is reported with the file and offset instead of
 * being served as data. An IO failure poisons the file: it refuses further work.
 */
final class PartitionFile implements AutoCloseable {
    private final FileIO io;
    private final int fileId;
    private final int pageSize;
    private volatile Throwable failure;
    // the header's stamp (PartitionFileHeader), read at open and kept as the slots are written; guarded by this
    private int version = PartitionFileHeader.VERSION;
    private long headerStoreId;
    private long slotStoreId;
    private long generation;
    /** The slot holding {@link #generation}, -1 when neither slot is whole. */
    private int currentSlot;

    private PartitionFile(FileIO io, int fileId, int pageSize, long storeId) {
        this.io = io;
        this.fileId = fileId;
        this.pageSize = pageSize;
        this.headerStoreId = storeId;
        this.slotStoreId = storeId;
    }

    /**
     * Opens the file; when it is missing, creates it durably (header written, fsynced, renamed into place) if
     * {@code create}, else refuses: a page is only read from a file some write created. A created file carries
     * {@code storeId} (0: not yet durable, see {@code PartitionFileHeader}) and generation 0 in both slots.
     */
    static PartitionFile open(FileIOFactory factory, Path path, int fileId, int pageSize, boolean create, long storeId) {
        try {
            if (!factory.exists(path)) {
                if (!create) throw new CorruptionException("page file is missing", path, 0);
                factory.createDirectories(path.getParent());
                return new PartitionFile(DurableFiles.create(factory, path, header(fileId, pageSize, storeId)), fileId, pageSize, storeId);
            }
            PartitionFile f = new PartitionFile(factory.open(path, false), fileId, pageSize, 0);
            try {
                f.checkHeader();
            } catch (IOException | RuntimeException e) {
                // a refused file is not kept open: the page store opens a file at its first access, so every read of
                // a damaged partition would otherwise leave one more descriptor behind
                Closeables.closeAfter(e, f.io);
                throw e;
            }
            return f;
        } catch (AccessDeniedException e) { // a store restored by another user, a file left read-only
            throw new StorageException("cannot open page file " + path + " for writing (permission denied); give this user write "
                    + "permission on the store's files, or open the store read-only", path, e);
        } catch (IOException e) {
            throw new StorageException("cannot open page file: " + e.getMessage(), path, e);
        }
    }

    private static ByteBuffer header(int fileId, int pageSize, long storeId) {
        ByteBuffer h = ByteBuffer.allocate(pageSize).order(ByteOrder.LITTLE_ENDIAN);
        h.putLong(PartitionFileHeader.MAGIC_OFFSET, PartitionFileHeader.MAGIC)
                .putInt(PartitionFileHeader.VERSION_OFFSET, PartitionFileHeader.VERSION)
                .putInt(PartitionFileHeader.PAGE_SIZE_OFFSET, pageSize)
                .putInt(PartitionFileHeader.FILE_ID_OFFSET, fileId)
                .putLong(PartitionFileHeader.STORE_ID_OFFSET, storeId)
                .putInt(PartitionFileHeader.CRC_OFFSET, headerCrc(h, PartitionFileHeader.CRC_OFFSET));
        for (int offset : PartitionFileHeader.SLOT_OFFSETS) h.put(offset, slot(fileId, storeId, 0), 0, PartitionFileHeader.SLOT_LENGTH);
        return h;
    }

    /** A generation slot's bytes. */
    private static byte[] slot(int fileId, long storeId, long generation) {
        ByteBuffer s = ByteBuffer.allocate(PartitionFileHeader.SLOT_LENGTH).order(ByteOrder.LITTLE_ENDIAN);
        s.putLong(0, storeId).putLong(8, generation).putInt(16, slotCrc(fileId, s));
        return s.array();
    }

    /** The CRC of a slot covers the file id too: a slot of another file's header does not pass for this one's. */
    private static int slotCrc(int fileId, ByteBuffer slot) {
        CRC32C crc = new CRC32C();
        crc.update(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(0, fileId));
        crc.update(slot.duplicate().position(0).limit(16));
        return (int) crc.getValue();
    }

    private void checkHeader() throws IOException {
        ByteBuffer h = ByteBuffer.allocate(PartitionFileHeader.READ_LENGTH).order(ByteOrder.LITTLE_ENDIAN);
        int n = Math.max(0, io.read(h, 0));
        int version = n >= PartitionFileHeader.VERSION_OFFSET + 4 ? h.getInt(PartitionFileHeader.VERSION_OFFSET) : PartitionFileHeader.VERSION;
        // a newer format keeps at least this build's fixed fields under their CRC: it is refused as newer, and a
        // version that does not check out is damage
        if (version > PartitionFileHeader.VERSION && n >= PartitionFileHeader.LENGTH && h.getLong(PartitionFileHeader.MAGIC_OFFSET) == PartitionFileHeader.MAGIC) {
            if (h.getInt(PartitionFileHeader.CRC_OFFSET) != headerCrc(h, PartitionFileHeader.CRC_OFFSET))
                throw new CorruptionException("page file header checksum mismatch (it names format version " + version + ")", io.path(), 0);
            throw new CorruptionException("unsupported page file format version " + version + " (this build reads 1 to "
                    + PartitionFileHeader.VERSION + "): it was written by a newer release", io.path(), PartitionFileHeader.VERSION_OFFSET);
        }
        int crcAt = PartitionFileHeader.crcOffset(version);
        if (n < crcAt + 4)
            throw new CorruptionException("page file header truncated", io.path(), 0);
        if (h.getInt(crcAt) != headerCrc(h, crcAt))
            throw new CorruptionException("page file header checksum mismatch", io.path(), 0);
        if (h.getLong(PartitionFileHeader.MAGIC_OFFSET) != PartitionFileHeader.MAGIC)
            throw new CorruptionException("not a Varve page file (bad magic)", io.path(), 0);
        if (version < 1)
            throw new CorruptionException("unsupported page file format version " + version, io.path(), PartitionFileHeader.VERSION_OFFSET);
        int ps = h.getInt(PartitionFileHeader.PAGE_SIZE_OFFSET);
        if (ps != pageSize)
            throw new StorageException("page file was written with pageSize " + ps + " but the store is configured with " + pageSize, io.path());
        int id = h.getInt(PartitionFileHeader.FILE_ID_OFFSET);
        if (id != fileId)
            throw new CorruptionException("page file holds file id " + id + ", expected " + fileId, io.path(), PartitionFileHeader.FILE_ID_OFFSET);
        this.version = version;
        this.headerStoreId = version == 1 ? 0 : h.getLong(PartitionFileHeader.STORE_ID_OFFSET);
        readSlots(h, n);
    }

    /** The current generation: the higher of the whole slots (a torn slot write leaves the other). */
    private void readSlots(ByteBuffer h, int read) {
        currentSlot = -1;
        generation = version == 1 ? 0 : -1; // a version 1 file without a whole slot was never stamped
        slotStoreId = headerStoreId;
        for (int i = 0; i < PartitionFileHeader.SLOT_OFFSETS.length; i++) {
            int at = PartitionFileHeader.SLOT_OFFSETS[i];
            if (read < at + PartitionFileHeader.SLOT_LENGTH) continue;
            ByteBuffer s = h.duplicate().position(at).limit(at + PartitionFileHeader.SLOT_LENGTH).slice().order(ByteOrder.LITTLE_ENDIAN);
            if (s.getInt(16) != slotCrc(fileId, s)) continue;
            long store = s.getLong(0);
            if (headerStoreId != 0 && store != headerStoreId) continue; // not this header's: damage
            long g = s.getLong(8);
            if (currentSlot < 0 || g > generation) {
                currentSlot = i;
                generation = g;
                slotStoreId = store;
            }
        }
    }

    /** The header's store id and generation. */
    synchronized PageFileStamp stamp() {
        return new PageFileStamp(version, headerStoreId != 0 ? headerStoreId : slotStoreId, generation);
    }

    /**
     * Records that checkpoint {@code checkpointId}'s page writes reached this file: writes the slot that does not hold
     * the current generation, or the one that already holds {@code checkpointId} (the caller fsyncs the file after). {@code storeId} goes into the slot when the header
     * names no store.
     */
    synchronized void stampGeneration(long checkpointId, long storeId) {
        checkUsable();
        // the slot already reading checkpointId is written again, not skipped: a restore reads back the stamp of the
        // checkpoint it completes, but a failed fsync may have left that stamp in the page cache only (marked clean
        // after a writeback error, never reaching the disk); rewriting that slot, not the other, keeps the previous
        // generation whole on disk if this write is torn
        int target = generation == checkpointId && currentSlot >= 0 ? currentSlot : currentSlot == 0 ? 1 : 0;
        long store = headerStoreId != 0 ? headerStoreId : slotStoreId != 0 ? slotStoreId : storeId;
        try {
            io.write(ByteBuffer.wrap(slot(fileId, store, checkpointId)), PartitionFileHeader.SLOT_OFFSETS[target]);
        } catch (IOException e) {
            throw fail("generation slot write failed at offset " + PartitionFileHeader.SLOT_OFFSETS[target], e);
        }
        currentSlot = target;
        generation = checkpointId;
        slotStoreId = store;
    }

    private static int headerCrc(ByteBuffer h, int crcOffset) {
        CRC32C crc = new CRC32C();
        ByteBuffer b = h.duplicate();
        b.position(0).limit(crcOffset);
        crc.update(b);
        return (int) crc.getValue();
    }

    long offsetOf(int index) {
        return (Integer.toUnsignedLong(index) + 1) * pageSize;
    }

    /** Reads page {@code index} into {@code dst} at {@code dstOffset} and checks it. */
    void read(int index, ByteBuffer dst, int dstOffset) {
        checkUsable();
        long off = offsetOf(index);
        ByteBuffer b = dst.duplicate();
        b.limit(dstOffset + pageSize).position(dstOffset);
        int n;
        try {
            n = io.read(b, off);
        } catch (IOException e) {
            throw fail("page read failed at offset " + off + " (page " + PageId.toString(PageId.of(fileId, index)) + ")", e);
        }
        if (n < pageSize)
            throw new CorruptionException("page " + PageId.toString(PageId.of(fileId, index)) + " lies beyond the end of the file ("
                    + n + " of " + pageSize + " bytes present)", io.path(), off);
        int stored = PageChecksum.stored(dst, dstOffset);
        int actual = PageChecksum.compute(dst, dstOffset, pageSize);
        if (stored != actual)
            throw new CorruptionException("page " + PageId.toString(PageId.of(fileId, index)) + " checksum mismatch (stored "
                    + Integer.toHexString(stored) + ", computed " + Integer.toHexString(actual) + ")", io.path(), off);
        long id = PageChecksum.storedPageId(dst, dstOffset);
        if (id != PageId.of(fileId, index))
            throw new CorruptionException("page at index " + index + " carries page id " + PageId.toString(id), io.path(), off);
    }

    /** Reads up to {@code count} pages from {@code index} on, unchecked; returns how many whole pages were there. */
    int readUnchecked(int index, int count, ByteBuffer dst, int dstOffset) {
        checkUsable();
        ByteBuffer b = dst.duplicate();
        b.limit(dstOffset + count * pageSize).position(dstOffset);
        try {
            return Math.max(0, io.read(b, offsetOf(index))) / pageSize;
        } catch (IOException e) {
            throw fail("page read failed at offset " + offsetOf(index) + " (" + count + " pages)", e);
        }
    }

    /** Writes {@code pages} consecutive page images (their CRCs already stamped) from index {@code index} on. */
    void write(int index, ByteBuffer src, int srcOffset, int pages) {
        checkUsable();
        ByteBuffer b = src.duplicate();
        b.limit(srcOffset + pages * pageSize).position(srcOffset);
        try {
            io.write(b, offsetOf(index));
        } catch (IOException e) {
            throw fail("page write failed at offset " + offsetOf(index) + " (" + pages + " pages)", e);
        }
    }

    /** fsync. */
    void force() {
        checkUsable();
        try {
            io.force();
        } catch (IOException e) {
            throw fail("fsync failed", e);
        }
    }

    /** The file's length in bytes: its header page and pages, and a page cut short at the end if any. */
    long bytes() {
        try {
            return io.size();
        } catch (IOException e) {
            throw fail("size failed", e);
        }
    }

    /** Pages present in the file. */
    long pageCount() {
        try {
            return Math.max(0, io.size() / pageSize - 1);
        } catch (IOException e) {
            throw fail("size failed", e);
        }
    }

    Path path() {
        return io.path();
    }

    private StorageException fail(String what, IOException e) {
        failure = e;
        return new StorageException(what + ": " + e.getMessage(), io.path(), e);
    }

    void checkUsable() {
        Throwable f = failure;
        if (f != null) throw new StorageException("page file failed earlier (" + f + "); the store must be reopened", io.path(), f);
    }

    @Override
    public void close() {
        try {
            io.close();
        } catch (IOException e) {
            throw new StorageException("close failed", io.path(), e);
        }
    }
}
