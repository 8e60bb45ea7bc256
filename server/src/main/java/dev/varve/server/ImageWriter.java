package dev.varve.server;

import dev.varve.config.ConfigLimits;
import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.store.PageChecksum;
import dev.varve.engine.ImageLoader;
import dev.varve.engine.IncomingStore;
import dev.varve.engine.SnapshotImage;
import dev.varve.engine.TableOptions;
import io.netty.buffer.ByteBuf;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Builds the received page image into a new store, one frame at a time ({@link ImageLoader}: pages written straight
 * into the page files, each checked), and verifies it: the digest of what arrived against the sender's END frame,
 * then the tables, placements and entry counts the written catalog and meta pages hold against the sender's TABLE
 * frames. Not thread-safe: one applier thread drives it.
 */
final class ImageWriter implements AutoCloseable {
    private final IncomingStore incoming;
    private final RecoveryMode recoveryModeOverride;
    private final boolean standby;
    private final ImageDigest received = new ImageDigest();
    private final List<SnapshotImage.TableImage> tables = new ArrayList<>();
    private ImageLoader loader;
    private VarveConfig config;
    private int pageSize;
    private long snapshotId;
    private int snapshotRank;
    private long imagePages;
    private long verifyNanos;
    /**
     * Where the pages are: the file they arrive for (-1 before the first), the index its next data page must have,
     * whether its meta page (its last) came, and the files begun so far. See {@link #checkOrder}.
     */
    private int fileAt = -1;
    private int nextIndex;
    private boolean fileDone = true;
    private final Set<Integer> filesBegun = new HashSet<>();

    /** {@code standby}: the image becomes a follow's standby, which must take every write the sender takes. */
    ImageWriter(IncomingStore incoming, RecoveryMode recoveryModeOverride, boolean standby) {
        this.incoming = incoming;
        this.recoveryModeOverride = recoveryModeOverride;
        this.standby = standby;
    }

    /** The rank of the snapshot the image is of, on the sender. */
    int snapshotRank() {
        return snapshotRank;
    }

    long snapshotId() {
        return snapshotId;
    }

    ImageDigest received() {
        return received;
    }

    /** Page bytes received so far. */
    long bytes() {
        return received.pages() * pageSize;
    }

    /** Pages the sender said the image holds. */
    long imagePages() {
        return imagePages;
    }

    /** Time {@link #end} spent making the pages durable and checking them. */
    long verifyNanos() {
        return verifyNanos;
    }

    void header(ByteBuf p) {
        // config, not loader: the loader is gone once the image is committed, and a HEADER after END (a follow stream)
        // would begin a new image in TARGET/.incoming, inside the standby, which would then refuse to open as unfinished
        if (config != null) throw new BackupException("the sender sent a second HEADER frame" + (loader == null ? ", after its image's END" : ""));
        snapshotId = p.readLong();
        snapshotRank = p.readInt(); // a backup holds no snapshots; a standby declares its own at this rank
        p.readLong(); // declared millis
        pageSize = p.readInt();
        int partitions = p.readInt();
        String mode = Frame.readString(p);
        RecoveryMode sent;
        try {
            sent = RecoveryMode.valueOf(mode);
        } catch (IllegalArgumentException e) {
            throw new BackupException("the sender's HEADER names recovery mode " + mode + ", which this build does not know (a sender of another"
                    + " build?)", e);
        }
        imagePages = p.readLong();
        // a sender of an earlier build does not say these: the defaults stand in for them, as they did for its standby
        long dataRegionSize = p.readableBytes() >= Long.BYTES ? p.readLong() : ConfigLimits.DATA_REGION_SIZE_DEFAULT;
        long walSegmentSize = p.readableBytes() >= Long.BYTES ? p.readLong() : ConfigLimits.WAL_SEGMENT_SIZE_DEFAULT;
        VarveConfig image = described(VarveConfig.builder().path(incoming.storeDir()).pageSize(pageSize).partitions(partitions)
                .recoveryMode(recoveryModeOverride != null ? recoveryModeOverride : sent).walSyncMode(WalSyncMode.LOG_ONLY));
        VarveConfig sender = described(image.toBuilder().dataRegionSize(dataRegionSize).walSegmentSize(walSegmentSize));
        config = standby ? standbyConfig(image, sender) : image;
        loader = ImageLoader.create(config); // the image's WAL is made here, in segments of config's size
    }

    /** Builds a configuration the sender's HEADER describes; one this build cannot make is refused naming the field. */
    private static VarveConfig described(VarveConfig.Builder b) {
        try {
            return b.build();
        } catch (IllegalArgumentException e) {
            throw new BackupException("the sender's HEADER describes a store this build cannot make: " + e.getMessage(), e);
        }
    }

    /**
     * A standby's configuration: the image's, with a data region and WAL segments at least as large as the sender's.
     * A write's head-room (and a new table's) must fit in half the data region, and its WAL record in one segment, so a
     * standby with either smaller than the sender's would refuse a batch the sender took, and the follow would end.
     * The segment size is chosen here, not when the standby opens: the image's WAL is made with it, and a WAL keeps its
     * segment size.
     */
    private static VarveConfig standbyConfig(VarveConfig image, VarveConfig sender) {
        return image.toBuilder().dataRegionSize(Math.max(image.dataRegionSize(), sender.dataRegionSize()))
                .walSegmentSize(Math.max(image.walSegmentSize(), sender.walSegmentSize())).build();
    }

    void table(ByteBuf p) {
        checkStarted();
        // each one is held until END: a sender streaming TABLE frames without end would grow this heap with them
        if (tables.size() == ShipProtocol.MAX_TABLES)
            throw new BackupException("the sender sent more than " + ShipProtocol.MAX_TABLES + " TABLE frames, the most tables a store holds");
        String name = Frame.readString(p);
        TableOptions options = ShipProtocol.readOptions(p);
        long entries = p.readLong();
        tables.add(new SnapshotImage.TableImage(name, options, entries));
        received.table(name, options, entries);
    }

    /** Writes one PAGES frame's pages. */
    void pages(ByteBuf p) {
        checkStarted();
        int fileId = p.readInt();
        int first = p.readInt();
        int count = p.readInt();
        if (count < 1 || count > ShipProtocol.pagesPerFrame(pageSize) || (long) count * pageSize != p.readableBytes())
            throw new BackupException("a PAGES frame says " + count + " pages of " + pageSize + " bytes and holds " + p.readableBytes() + " bytes");
        checkOrder(fileId, first, count);
        ByteBuffer run = loader.runBuffer(p.readableBytes()).limit(p.readableBytes());
        p.getBytes(p.readerIndex(), run); // the one copy of the pages on this side: out of the received buffers
        run.flip();
        // the loader checks each page's bytes against its stored CRC: the digest holds the CRCs against the sender's
        for (int i = 0; i < count; i++) received.page(fileId, first + i, PageChecksum.stored(run, i * pageSize));
        loader.write(fileId, first, run); // written from run as it is, which is the loader's from here on
    }

    /**
     * Refuses pages that do not come in the order a sender hands them out ({@link SnapshotImage#next}): file by file,
     * each file's data pages 1, 2, ... in runs that continue one another, then its meta page (index 0) alone, and no
     * file twice. A page index from the stream sizes what the loader writes and records (the file's length, the set
     * of its pages written), so a page claiming an index far beyond the ones sent would have a frame of a few
     * kilobytes leave a sparse file of terabytes and take hundreds of MiB of heap; in order, every index is one past
     * a page that arrived. The END digest would refuse a misordered image anyway, but only after all of it.
     */
    private void checkOrder(int fileId, int first, int count) {
        if (fileId != fileAt) {
            if (!fileDone) throw new BackupException("the sender sent pages of " + fileName(fileId) + " before the meta page of " + fileName(fileAt)
                    + ", which ends that file (pages come file by file, in order)");
            if (fileId < 0 || !filesBegun.add(fileId)) throw new BackupException("the sender sent pages of " + fileName(fileId) + " again, or of a"
                    + " file that cannot exist (pages come file by file, each file once)");
            fileAt = fileId;
            nextIndex = 1;
            fileDone = false;
        } else if (fileDone) {
            throw new BackupException("the sender sent pages of " + fileName(fileId) + " after its meta page, which ends the file");
        }
        if (first == 0 && count == 1) {
            fileDone = true;
        } else if (first != nextIndex) {
            throw new BackupException("the sender sent page " + Integer.toUnsignedString(first) + (count > 1 ? " and the " + (count - 1) + " after it" : "")
                    + " of " + fileName(fileId) + " where page " + nextIndex + " or its meta page, 0, comes next (pages come file by file, in order)");
        } else {
            nextIndex += count;
        }
    }

    /** A page file's name in the store, as the sender's file id gives it. */
    private static String fileName(int fileId) {
        return String.format("page file t%05d-p%05d", fileId >>> 16, fileId & 0xFFFF);
    }

    /**
     * Checks the END frame against what arrived, finishes the store (the last fsyncs), checks its tables and entry
     * counts against the sender's and commits; returns the configuration to open the committed store with (follow
     * mode).
     */
    VarveConfig end(ByteBuf p) {
        checkStarted();
        long pages = p.readLong();
        int tableCount = p.readInt();
        int crc = p.readInt();
        String arrived = received.mismatch(pages, tableCount, crc);
        if (arrived != null) throw new BackupException("the received image does not match what the sender sent: " + arrived);
        long verifyStart = System.nanoTime();
        List<SnapshotImage.TableImage> held = loader.finish();
        loader = null;
        if (!held.equals(tables)) throw new BackupException("the store built from the image does not hold what the sender read: tables "
                + held + ", the sender's " + tables);
        verifyNanos = System.nanoTime() - verifyStart;
        incoming.commit();
        return config.toBuilder().path(incoming.target()).build();
    }

    private void checkStarted() {
        if (loader == null) throw new BackupException("the sender sent image data before its HEADER frame, or after its END");
    }

    /** Releases the directory of an unfinished transfer (it stays marked unfinished). */
    @Override
    public void close() {
        if (loader != null) {
            loader.close();
            loader = null;
        }
    }
}
