package dev.varve.server;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import dev.varve.core.store.PageChecksum;
import dev.varve.engine.SnapshotImage;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The receiver ({@link SnapshotBackup}) against a sender that is not a Varve server, or a broken one: a
 * {@link FakeSender} speaking the wire format with a real snapshot's pages, and sending what a Varve server never
 * sends. Whatever it sends, the receiver writes nothing outside its target, allocates no more than the bytes it was
 * sent call for, fails with a message that says what was wrong, and leaves the target unfinished (never a store that
 * opens with wrong data).
 */
@Timeout(120)
class HostileSenderTest {
    private static final String MODE = RecoveryMode.CHECKPOINT_RECOVERY_FILE.name();

    @TempDir
    Path dir;
    private Path target;
    private Varve source;
    private long snapshot;

    @BeforeEach
    void source() {
        target = dir.resolve("target");
        source = Varve.open(ShippingTest.config(dir.resolve("source"), RecoveryMode.CHECKPOINT_RECOVERY_FILE));
        Table t = source.table("t");
        for (int i = 0; i < 2000; i++) t.put(("key-" + i).getBytes(StandardCharsets.UTF_8), new byte[100 + i % 300]);
        snapshot = source.snapshotNow();
    }

    @org.junit.jupiter.api.AfterEach
    void closeSource() {
        source.close();
    }

    private SnapshotBackup backup() {
        return new SnapshotBackup(sender.address(), snapshot, target).idleTimeout(Duration.ofSeconds(5));
    }

    private FakeSender sender;

    @BeforeEach
    void sender() throws Exception {
        sender = new FakeSender();
    }

    @org.junit.jupiter.api.AfterEach
    void closeSender() throws Exception {
        sender.close();
    }

    private static CompletableFuture<BackupResult> start(SnapshotBackup backup) {
        return CompletableFuture.supplyAsync(backup::run);
    }

    /** The failure {@code run} ends with, which must be a {@link BackupException}. */
    private static String failure(CompletableFuture<BackupResult> run) throws Exception {
        ExecutionException e = assertThrows(ExecutionException.class, () -> run.get(60, TimeUnit.SECONDS));
        assertInstanceOf(BackupException.class, e.getCause(), () -> "a BackupException, not " + e.getCause());
        return e.getCause().getMessage();
    }

    private void assertUnfinished() {
        IllegalStateException refused = assertThrows(IllegalStateException.class,
                () -> Varve.open(ShippingTest.config(target, RecoveryMode.CHECKPOINT_RECOVERY_FILE)));
        assertTrue(refused.getMessage().contains("unfinished transfer"), refused.getMessage());
    }

    /** A page of {@code image} (its first) re-stamped to claim to be page {@code index} of file {@code fileId}, CRC and all. */
    private static ByteBuffer forgedPage(SnapshotImage image, int fileId, int index) {
        ByteBuffer page = ByteBuffer.allocateDirect(image.pageSize());
        image.next(page);
        page.flip();
        page.duplicate().order(ByteOrder.LITTLE_ENDIAN).putLong(PageHeader.PAGE_ID_OFFSET, PageId.of(fileId, index));
        PageChecksum.stamp(page, 0, image.pageSize());
        return page;
    }

    // ------------------------------------------------------------------ the target and what lies outside it

    /**
     * The target is prepared before the receiver connects, and preparing an unfinished transfer wipes it: a directory
     * holding a {@code .incoming} of another program's beside its own files was wiped whole, whoever answered. Now
     * it is refused untouched, before any connection.
     */
    @Test
    void aDirectoryHoldingOtherFilesBesideAnIncomingIsRefusedUntouched() throws Exception {
        Files.createDirectories(target.resolve(Varve.INCOMING_DIR));
        Files.writeString(target.resolve("notes.txt"), "keep me");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> backup().run());
        assertTrue(e.getMessage().contains("notes.txt"), e.getMessage());
        assertEquals("keep me", Files.readString(target.resolve("notes.txt")));
    }

    /**
     * An unfinished target whose entries are symbolic links to directories outside it (a {@code .incoming/pages}, a
     * {@code wal} a cut-short commit moved up) is wiped without following them: a transfer from the sender completes,
     * and what the links led to is untouched.
     */
    @Test
    void symbolicLinksInAnUnfinishedTargetAreRemovedNotFollowed() throws Exception {
        Path outsideA = Files.createDirectories(dir.resolve("outside-a"));
        Path outsideB = Files.createDirectories(dir.resolve("outside-b"));
        Files.writeString(outsideA.resolve("a.txt"), "a");
        Files.writeString(outsideB.resolve("b.txt"), "b");
        Files.createDirectories(target.resolve(Varve.INCOMING_DIR));
        Files.createSymbolicLink(target.resolve(Varve.INCOMING_DIR).resolve("pages"), outsideA);
        Files.createSymbolicLink(target.resolve("wal"), outsideB);
        CompletableFuture<BackupResult> run = start(backup());
        try (SnapshotImage image = SnapshotImage.open(source, snapshot)) {
            sender.accept();
            sender.image(image, MODE);
        }
        assertEquals(snapshot, run.get(60, TimeUnit.SECONDS).snapshotId());
        assertEquals("a", Files.readString(outsideA.resolve("a.txt")));
        assertEquals("b", Files.readString(outsideB.resolve("b.txt")));
        try (Stream<Path> a = Files.list(outsideA); Stream<Path> b = Files.list(outsideB)) {
            assertEquals(2, a.count() + b.count(), "nothing was written where the links led");
        }
        assertFalse(Files.isSymbolicLink(target.resolve("wal")));
        try (Varve copy = Varve.open(ShippingTest.config(target, RecoveryMode.CHECKPOINT_RECOVERY_FILE))) {
            assertEquals(100 + 1999 % 300, copy.table("t").get(bytes("key-1999")).length);
        }
    }

    // ------------------------------------------------------------------ bounds before allocation

    /**
     * A PAGES frame whose page claims an index far beyond anything sent (its CRC and page id right) would have the
     * receiver write at an offset of terabytes (a sparse file that size in the target) and size its record of written
     * pages by the index (a 16 KiB frame made the receiver's heap take 32 MiB here, 256 MiB at the largest index):
     * pages come file by file, in order, so the first page of a file that is not the next one is refused as it arrives.
     */
    @Test
    void aPageFarBeyondTheFilesNextIsRefusedBeforeItIsWritten() throws Exception {
        CompletableFuture<BackupResult> run = start(backup());
        try (SnapshotImage image = SnapshotImage.open(source, snapshot)) {
            sender.accept();
            sender.header(image, 1, MODE, 64L << 20);
            sender.tables(image, new ImageDigest());
            sender.pages(0, 1 << 28, forgedPage(image, 0, 1 << 28), image.pageSize());
            String m = failure(run);
            assertTrue(m.contains("page 268435456") && m.contains("t00000-p00000"), m);
        }
        assertUnfinished();
        try (Stream<Path> files = Files.walk(target)) { // no page file was extended to where the forged page claimed to go
            for (Path p : files.filter(p -> p.getFileName().toString().endsWith(".page")).toList())
                assertTrue(Files.size(p) < (1L << 20), p + " is " + Files.size(p) + " bytes");
        }
    }

    /**
     * The receiver reads the received catalog's B+tree to check the image against the sender's tables; a tree's
     * height, from its meta page, sized the scan's per-level arrays. A catalog meta page (its CRC right) saying the
     * tree is two billion levels high made the receiver allocate 24 GB — an OutOfMemoryError in its JVM — where a
     * tree of 2^32 pages is at most 33 levels high: refused as a damaged tree, the target unfinished.
     */
    @Test
    void aTreeHeightNoFileCanHoldIsRefusedBeforeItSizesAnything() throws Exception {
        CompletableFuture<BackupResult> run = start(backup());
        try (SnapshotImage image = SnapshotImage.open(source, snapshot)) {
            sender.accept();
            sender.header(image, 1, MODE, 64L << 20);
            ImageDigest digest = new ImageDigest();
            sender.tables(image, digest);
            ByteBuffer page = ByteBuffer.allocateDirect(image.pageSize());
            while (image.hasNext()) {
                int fileId = image.nextFileId();
                int index = image.nextIndex();
                page.clear();
                image.next(page);
                page.flip();
                if (fileId == 0 && index == 0) { // the catalog's meta page: its height (at byte 52) two billion
                    page.duplicate().order(ByteOrder.LITTLE_ENDIAN).putInt(52, Integer.MAX_VALUE);
                    PageChecksum.stamp(page, 0, image.pageSize());
                }
                sender.pages(fileId, index, page, image.pageSize());
                digest.page(fileId, index);
            }
            sender.end(digest);
            String m = failure(run);
            assertTrue(m.contains("height") && !m.contains("OutOfMemoryError"), m);
        }
        assertUnfinished();
    }

    /**
     * The catalog's leaves are read too: a catalog entry (nine bytes) whose cell claims a value of two billion bytes
     * made the reader allocate that before it followed the value's overflow chain (an OutOfMemoryError). The received
     * catalog is checked whole, as {@code varve verify} checks a tree, before anything reads it: refused as damaged.
     */
    @Test
    void aCatalogEntryClaimingAHugeValueIsRefusedBeforeItSizesAnything() throws Exception {
        CompletableFuture<BackupResult> run = start(backup());
        try (SnapshotImage image = SnapshotImage.open(source, snapshot)) {
            sender.accept();
            sender.header(image, 1, MODE, 64L << 20);
            ImageDigest digest = new ImageDigest();
            sender.tables(image, digest);
            ByteBuffer page = ByteBuffer.allocateDirect(image.pageSize());
            boolean forged = false;
            while (image.hasNext()) {
                int fileId = image.nextFileId();
                int index = image.nextIndex();
                page.clear();
                image.next(page);
                page.flip();
                ByteBuffer le = page.duplicate().order(ByteOrder.LITTLE_ENDIAN);
                if (fileId == 0 && le.getShort(PageHeader.TYPE_OFFSET) == PageHeader.TYPE_LEAF && le.getShort(PageHeader.SIZE) > 0) {
                    int cell = le.getShort(48); // slot 0: its cell's offset; the cell holds key length (u16), value length (i32), key
                    le.putInt(cell + 2, Integer.MAX_VALUE - 16);
                    PageChecksum.stamp(page, 0, image.pageSize());
                    forged = true;
                }
                sender.pages(fileId, index, page, image.pageSize());
                digest.page(fileId, index);
            }
            assertTrue(forged, "the catalog has a leaf with an entry");
            sender.end(digest);
            String m = failure(run);
            assertTrue(m.contains("catalog") && !m.contains("OutOfMemoryError"), m);
        }
        assertUnfinished();
    }

    /**
     * TABLE frames are held until END, to check the image against them: a sender streaming them without end grew the
     * receiver's heap several times faster than the bytes it sent. A store holds at most 32,767 tables; the frame
     * after that many is refused.
     */
    @Test
    void moreTableFramesThanAStoreHoldsTablesAreRefused() throws Exception {
        CompletableFuture<BackupResult> run = start(backup());
        try (SnapshotImage image = SnapshotImage.open(source, snapshot)) {
            sender.accept();
            sender.header(image, 1, MODE, 64L << 20);
        }
        java.io.ByteArrayOutputStream frames = new java.io.ByteArrayOutputStream();
        for (int i = 0; i <= ShipProtocol.MAX_TABLES; i++) {
            String name = "t" + i;
            io.netty.buffer.ByteBuf f = FakeSender.frame(ShipProtocol.TABLE, b -> {
                Frame.writeString(b, name);
                b.writeByte(0).writeInt(1).writeLong(0);
            });
            byte[] bytes = new byte[f.readableBytes()];
            f.readBytes(bytes);
            f.release();
            frames.writeBytes(bytes);
        }
        sender.sendRaw(frames.toByteArray());
        String m = failure(run);
        assertTrue(m.contains("more than " + ShipProtocol.MAX_TABLES + " TABLE frames"), m);
        assertUnfinished();
    }

    // ------------------------------------------------------------------ verification before the target is complete

    /**
     * A valid prefix of the image, then bytes that are not a frame: the first one that fails its CRC32C ends the
     * transfer, the target stays unfinished, and the same backup run again against a sender that sends it whole
     * completes.
     */
    @Test
    void aValidPrefixThenGarbageLeavesTheTargetUnfinishedAndARerunCompletes() throws Exception {
        CompletableFuture<BackupResult> run = start(backup());
        try (SnapshotImage image = SnapshotImage.open(source, snapshot)) {
            sender.accept();
            sender.header(image, 1, MODE, 64L << 20);
            sender.tables(image, new ImageDigest());
            ByteBuffer page = ByteBuffer.allocateDirect(image.pageSize());
            image.next(page);
            page.flip();
            sender.pages(image.fileId(), image.index(), page, image.pageSize());
            byte[] garbage = new byte[4096];
            new java.util.Random(7).nextBytes(garbage);
            ByteBuffer.wrap(garbage).putInt(garbage.length - 4); // a whole frame of random bytes: its CRC32C has to catch it
            sender.sendRaw(garbage);
            String m = failure(run);
            assertTrue(m.contains("fails its CRC32C"), m);
        }
        assertUnfinished();
        sender.close();
        sender = new FakeSender();
        CompletableFuture<BackupResult> again = start(backup());
        try (SnapshotImage image = SnapshotImage.open(source, snapshot)) {
            sender.accept();
            sender.image(image, MODE);
        }
        assertEquals(snapshot, again.get(60, TimeUnit.SECONDS).snapshotId());
        try (Varve copy = Varve.open(ShippingTest.config(target, RecoveryMode.CHECKPOINT_RECOVERY_FILE))) {
            assertEquals(100 + 1234 % 300, copy.table("t").get(bytes("key-1234")).length);
        }
    }

    /**
     * Every frame well formed and each passing its CRC, but one PAGES frame left out (a data page of the table's
     * file, so the order still holds) or sent twice: the END digest, or the loader's record of pages written,
     * refuses it, and the target stays unfinished.
     */
    @Test
    void aFrameLeftOutOrRepeatedIsRefusedAtTheLatestByTheEndDigest() throws Exception {
        for (String fault : new String[] {"left out", "repeated"}) {
            sender.close();
            sender = new FakeSender();
            target = dir.resolve("target-" + fault.replace(' ', '-'));
            CompletableFuture<BackupResult> run = start(backup());
            try (SnapshotImage image = SnapshotImage.open(source, snapshot)) {
                sender.accept();
                sender.header(image, 1, MODE, 64L << 20);
                ImageDigest digest = new ImageDigest();
                sender.tables(image, digest);
                ByteBuffer page = ByteBuffer.allocateDirect(image.pageSize());
                boolean done = false;
                while (image.hasNext()) {
                    int fileId = image.nextFileId();
                    int index = image.nextIndex();
                    page.clear();
                    image.next(page);
                    page.flip();
                    digest.page(fileId, index); // the sender's digest counts every page
                    boolean last = !image.hasNext() || image.nextFileId() != fileId || image.nextIndex() == 0;
                    if (!done && fileId != 0 && index > 0 && last) { // the last data page of a file: nothing comes after it in its run
                        done = true;
                        if (fault.equals("left out")) continue;
                        sender.pages(fileId, index, page, image.pageSize());
                    }
                    sender.pages(fileId, index, page, image.pageSize());
                }
                sender.end(digest);
                String m = failure(run);
                assertTrue(m.contains(fault.equals("left out") ? "does not match what the sender sent" : "where page"), fault + ": " + m);
            }
            assertUnfinished();
        }
    }

    // ------------------------------------------------------------------ a sender that stalls, or is not one

    /**
     * A sender that accepts and then sends nothing, or half a frame and then nothing, is given up on after the idle
     * timeout, with a message that says so and that the target stays unfinished.
     */
    @Test
    void aSilentSenderIsGivenUpOnAfterTheIdleTimeout() throws Exception {
        for (boolean halfAFrame : new boolean[] {false, true}) {
            sender.close();
            sender = new FakeSender();
            CompletableFuture<BackupResult> run = start(new SnapshotBackup(sender.address(), snapshot, target).idleTimeout(Duration.ofSeconds(2)));
            sender.accept();
            long started = System.nanoTime();
            if (halfAFrame) sender.sendRaw(new byte[] {0, 0, 0, 100, ShipProtocol.HEADER, 0, 0});
            String m = failure(run);
            assertTrue(m.contains("nothing arrived from the sender for 2 s") && m.contains("stays unfinished"), m);
            assertTrue(System.nanoTime() - started < TimeUnit.SECONDS.toNanos(30));
            assertUnfinished();
        }
    }

    /** An idle timeout under a second is said as it is, not as "0 s". */
    @Test
    void anIdleTimeoutUnderASecondIsSaidAsItIs() throws Exception {
        CompletableFuture<BackupResult> run = start(new SnapshotBackup(sender.address(), snapshot, target).idleTimeout(Duration.ofMillis(300)));
        sender.accept();
        String m = failure(run);
        assertTrue(m.contains("nothing arrived from the sender for 300 ms"), m);
    }

    /**
     * A sender that refuses the receiver's protocol version (as every Varve server since version 1 does, with an
     * ERROR frame) is reported with its reason, which names both versions.
     */
    @Test
    void aSenderOfAnotherVersionIsReportedWithBothVersions() throws Exception {
        CompletableFuture<BackupResult> run = start(backup());
        sender.accept();
        assertEquals(ShipProtocol.VERSION, sender.helloVersion);
        String refusal = "shipping protocol version " + sender.helloVersion + " is not supported (this server speaks 4)";
        sender.send(ShipProtocol.ERROR, e -> Frame.writeString(e, refusal));
        String m = failure(run);
        assertEquals("the sender refused: " + refusal, m);
        assertUnfinished();
    }

    /**
     * A peer that is not a Varve server: one answering with text (an HTTP or SSH server, a banner), one whose first
     * bytes read as a length over any frame's (a TLS alert), one announcing a negative length, and one a frame of a
     * type that no sender sends first. Each fails the transfer at once with a message saying what came.
     */
    @Test
    void aPeerThatIsNotAVarveServerFailsTheTransferAtOnce() throws Exception {
        Object[][] peers = {
                {"SSH-2.0-OpenSSH_9.2\r\n".getBytes(StandardCharsets.US_ASCII), "does not speak Varve's shipping protocol"},
                {new byte[] {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46}, "does not speak Varve's shipping protocol: its stream starts 15 03 03 00"},
                {new byte[] {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xF0, 1, 2, 3}, "does not speak Varve's shipping protocol: its stream starts ff ff ff f0"},
        };
        for (Object[] peer : peers) {
            sender.close();
            sender = new FakeSender();
            CompletableFuture<BackupResult> run = start(backup());
            sender.accept();
            long started = System.nanoTime();
            sender.sendRaw((byte[]) peer[0]);
            String m = failure(run);
            assertTrue(m.contains((String) peer[1]), m);
            assertTrue(System.nanoTime() - started < TimeUnit.SECONDS.toNanos(4), "at once, not after the idle timeout: " + m);
        }
        sender.close();
        sender = new FakeSender();
        CompletableFuture<BackupResult> run = start(backup());
        sender.accept();
        sender.send(ShipProtocol.SNAPSHOT, f -> f.writeLong(1).writeLong(2).writeInt(1));
        String m = failure(run);
        assertTrue(m.contains("unexpected SNAPSHOT frame"), m);
    }

    /**
     * A HEADER describing a store this build cannot make (a sender of another build: a recovery mode it does not
     * know, a page size it does not take) is refused naming what it said.
     */
    @Test
    void aHeaderThisBuildCannotTakeIsRefusedNamingWhatItSaid() throws Exception {
        for (String what : new String[] {"recovery mode", "page size"}) {
            sender.close();
            sender = new FakeSender();
            CompletableFuture<BackupResult> run = start(backup());
            sender.accept();
            sender.send(ShipProtocol.HEADER, h -> {
                h.writeLong(snapshot).writeInt(1).writeLong(0).writeInt(what.equals("page size") ? 3000 : 4096).writeInt(4);
                Frame.writeString(h, what.equals("page size") ? MODE : "WAL_QUANTUM");
                h.writeLong(10).writeLong(64L << 20);
            });
            String m = failure(run);
            assertTrue(m.contains("HEADER") && m.contains(what.equals("page size") ? "3000" : "WAL_QUANTUM"), what + ": " + m);
            assertFalse(m.contains("No enum constant"), m);
            assertUnfinished();
        }
    }

    /**
     * Frames announcing the largest length the receiver takes, whose bytes never come: nothing is allocated up front
     * (the frame is gathered as its bytes arrive), and the idle timeout ends the wait.
     */
    @Test
    void aFrameAnnouncedButNeverSentAllocatesNothingAndTimesOut() throws Exception {
        CompletableFuture<BackupResult> run = start(new SnapshotBackup(sender.address(), snapshot, target).idleTimeout(Duration.ofSeconds(2)));
        sender.accept();
        int length = ShipProtocol.MAX_FRAME_BYTES;
        sender.sendRaw(new byte[] {(byte) (length >>> 24), (byte) (length >>> 16), (byte) (length >>> 8), (byte) length, ShipProtocol.HEADER});
        String m = failure(run);
        assertTrue(m.contains("nothing arrived from the sender for 2 s"), m);
    }

    // ------------------------------------------------------------------ follow mode

    /** Starts a follow against the fake sender, ships it the whole image, and waits until the standby is in place. */
    private CompletableFuture<BackupResult> followWithImage() throws Exception {
        CountDownLatch imageIn = new CountDownLatch(1);
        CompletableFuture<BackupResult> run = start(new SnapshotBackup(sender.address(), 1, target).follow(true).idleTimeout(Duration.ofSeconds(10))
                .progress(new ShipProgress() {
                    @Override
                    public void received(long pages, long imagePages, long bytes) {
                    }

                    @Override
                    public void imageComplete(BackupResult image) {
                        imageIn.countDown();
                    }
                }));
        sender.accept();
        assertEquals(ShipProtocol.FOLLOW, sender.helloFlags & ShipProtocol.FOLLOW);
        try (SnapshotImage image = SnapshotImage.open(source, snapshot)) {
            sender.image(image, MODE);
        }
        assertTrue(imageIn.await(60, TimeUnit.SECONDS), "the image is in place");
        return run;
    }

    /** A CHANGES frame of one put (or a remove, for a null value) into {@code partition} of {@code table}. */
    private void put(long lsn, String table, int partition, byte[] key, byte[] value) throws Exception {
        sender.send(ShipProtocol.CHANGES, f -> {
            f.writeLong(lsn).writeInt(1);
            Frame.writeString(f, table);
            f.writeInt(partition).writeShort(key.length).writeBytes(key);
            if (value == null) f.writeInt(-1);
            else f.writeInt(value.length).writeBytes(value);
        });
    }

    /** The partition of the hash-placed table "t" that {@code key} belongs to (the one whose reads take it). */
    private int partitionOf(byte[] key) {
        Table t = source.table("t");
        for (int p = 0; p < t.partitions(); p++) {
            try {
                t.partition(p).get(key);
                return p;
            } catch (IllegalArgumentException elsewhere) {
                // the key belongs to another partition
            }
        }
        throw new AssertionError("no partition takes the key");
    }

    /** Opens the standby the follow left and hands it to {@code check}. */
    private void withStandby(java.util.function.Consumer<Varve> check) {
        try (Varve standby = Varve.open(VarveConfig.builder().path(target).build())) {
            check.accept(standby);
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * The standby takes a data region as large as the sender's HEADER says: a size the JVM cannot allocate is refused
     * before anything is allocated, saying it is the sender's (the refusal said "lower dataRegionSize", which the
     * receiver has no way to), and the image stays complete in the target.
     */
    @Test
    void aSendersDataRegionTheStandbyCannotAllocateIsRefusedAsTheSenders() throws Exception {
        CompletableFuture<BackupResult> run = start(new SnapshotBackup(sender.address(), 1, target).follow(true));
        sender.accept();
        try (SnapshotImage image = SnapshotImage.open(source, snapshot)) {
            sender.header(image, 1, MODE, 1L << 40);
            ImageDigest digest = new ImageDigest();
            sender.tables(image, digest);
            sender.allPages(image, digest);
            sender.end(digest);
        }
        String m = failure(run);
        assertTrue(m.contains("as large as the sender's (" + (1L << 40) + " bytes"), m);
        try (Varve copy = Varve.open(ShippingTest.config(target, RecoveryMode.CHECKPOINT_RECOVERY_FILE))) {
            assertEquals(100 + 1999 % 300, copy.table("t").get(bytes("key-1999")).length);
        }
    }

    /**
     * A CHANGES frame's change count and value length size what the receiver allocates before it reads the changes:
     * a count of two billion in a frame of a few bytes (its CRC right) made it allocate a list of that many, a value
     * length of a gigabyte a gigabyte: an OutOfMemoryError in the receiving JVM (whatever else it runs) instead of a
     * refused frame. Refused before anything is allocated, the standby keeping every write before it.
     */
    @Test
    void aChangesFrameCountingMoreThanItHoldsIsRefusedBeforeAnythingIsAllocated() throws Exception {
        CompletableFuture<BackupResult> run = followWithImage();
        byte[] key = bytes("followed");
        put(100, "t", partitionOf(key), key, bytes("v1"));
        sender.send(ShipProtocol.CHANGES, f -> f.writeLong(101).writeInt(Integer.MAX_VALUE - 16));
        String m = failure(run);
        assertTrue(m.contains("CHANGES") && !m.contains("OutOfMemoryError"), m);
        withStandby(s -> assertArrayEquals(bytes("v1"), s.table("t").get(key)));
    }

    @Test
    void aValueLengthLongerThanTheFrameIsRefusedBeforeAnythingIsAllocated() throws Exception {
        CompletableFuture<BackupResult> run = followWithImage();
        byte[] key = bytes("followed");
        put(100, "t", partitionOf(key), key, bytes("v1"));
        sender.send(ShipProtocol.CHANGES, f -> {
            f.writeLong(101).writeInt(1);
            Frame.writeString(f, "t");
            f.writeInt(partitionOf(key)).writeShort(key.length).writeBytes(key).writeInt(1 << 30);
        });
        String m = failure(run);
        assertTrue(m.contains("CHANGES") && !m.contains("OutOfMemoryError"), m);
        withStandby(s -> assertArrayEquals(bytes("v1"), s.table("t").get(key)));
    }

    /**
     * A CHANGES frame cut short inside its changes (a count of three, two changes) is refused as malformed, with
     * nothing of it applied: the write is parsed whole before it is applied, so the standby keeps every write before
     * it and none of this one. (The refusal said "IndexOutOfBoundsException: readerIndex(44) + length(2) exceeds
     * writerIndex(44): UnpooledSlicedByteBuf(...)".)
     */
    @Test
    void aMalformedChangesFrameAppliesNothingOfItsWrite() throws Exception {
        CompletableFuture<BackupResult> run = followWithImage();
        byte[] a = bytes("a");
        byte[] b = bytes("b");
        put(100, "t", partitionOf(a), a, bytes("v1"));
        sender.send(ShipProtocol.CHANGES, f -> {
            f.writeLong(101).writeInt(3);
            for (byte[] key : new byte[][] {a, b}) {
                Frame.writeString(f, "t");
                f.writeInt(partitionOf(key)).writeShort(key.length).writeBytes(key).writeInt(2).writeBytes(bytes("v2"));
            }
        });
        String m = failure(run);
        assertTrue(m.contains("malformed CHANGES") && !m.contains("IndexOutOfBounds"), m);
        withStandby(s -> {
            assertArrayEquals(bytes("v1"), s.table("t").get(a));
            assertEquals(null, s.table("t").get(b));
        });
    }

    /** A value length below -1 (a remove) was taken for a remove: refused, the key keeps its value. */
    @Test
    void aValueLengthBelowMinusOneIsRefusedNotTakenForARemove() throws Exception {
        CompletableFuture<BackupResult> run = followWithImage();
        byte[] key = bytes("followed");
        put(100, "t", partitionOf(key), key, bytes("v1"));
        sender.send(ShipProtocol.CHANGES, f -> {
            f.writeLong(101).writeInt(1);
            Frame.writeString(f, "t");
            f.writeInt(partitionOf(key)).writeShort(key.length).writeBytes(key).writeInt(-2);
        });
        String m = failure(run);
        assertTrue(m.contains("malformed CHANGES"), m);
        withStandby(s -> assertArrayEquals(bytes("v1"), s.table("t").get(key)));
    }

    /**
     * A second HEADER once the image is in (a sender restarting its image, a proxy splicing in another stream) began
     * a new image in TARGET/.incoming, inside the standby, which then refused to open as "an unfinished transfer"
     * though it held every write it was sent: refused, the standby stays openable.
     */
    @Test
    void aHeaderAfterTheImageIsRefusedAndTheStandbyStaysOpenable() throws Exception {
        CompletableFuture<BackupResult> run = followWithImage();
        byte[] key = bytes("followed");
        put(100, "t", partitionOf(key), key, bytes("v1"));
        try (SnapshotImage image = SnapshotImage.open(source, snapshot)) {
            sender.header(image, 1, MODE, 64L << 20);
        }
        String m = failure(run);
        assertTrue(m.contains("HEADER"), m);
        assertFalse(Files.exists(target.resolve(Varve.INCOMING_DIR)), "no transfer begun inside the standby");
        withStandby(s -> assertArrayEquals(bytes("v1"), s.table("t").get(key)));
    }

    /**
     * Table names are data, never paths: tables created by the follow stream under names like "../../escape",
     * "/abs", "a/b" and one with a NUL are catalog entries of the standby (whose files are named by table id), and
     * nothing appears outside the target.
     */
    @Test
    void tableNamesFromTheStreamAreNeverPaths() throws Exception {
        Path marker = Files.writeString(dir.resolve("before.txt"), "x");
        java.util.Set<Path> before = listAll(dir.getParent().resolve(dir.getFileName()));
        CompletableFuture<BackupResult> run = followWithImage();
        String[] names = {"../../escape", "/abs", "a/b", "nul\0name", "..", "."};
        long lsn = 100;
        for (String name : names) {
            long at = lsn++;
            sender.send(ShipProtocol.TABLE_CREATED, f -> {
                f.writeLong(at);
                Frame.writeString(f, name);
                f.writeByte(1).writeInt(2); // caller-placed, two partitions
            });
            put(lsn++, name, 1, bytes("k"), bytes(name));
        }
        sender.send(ShipProtocol.ERROR, e -> Frame.writeString(e, "that is all"));
        String m = failure(run);
        assertTrue(m.contains("that is all"), m);
        java.util.Set<Path> after = listAll(dir);
        after.removeIf(p -> p.startsWith(target) || p.startsWith(dir.resolve("source")));
        before.removeIf(p -> p.startsWith(target) || p.startsWith(dir.resolve("source")));
        assertEquals(before, after, "nothing created outside the target");
        assertTrue(Files.exists(marker));
        withStandby(st -> {
            for (String name : names) assertArrayEquals(bytes(name), st.table(name).partition(1).get(bytes("k")), name);
        });
    }

    private static java.util.Set<Path> listAll(Path root) throws java.io.IOException {
        try (Stream<Path> s = Files.walk(root)) {
            return s.collect(java.util.stream.Collectors.toCollection(java.util.HashSet::new));
        }
    }

    private void declare(long lsn, long id) throws Exception {
        sender.send(ShipProtocol.SNAPSHOT, f -> f.writeLong(lsn).writeLong(id).writeInt(1));
    }

    /** The value of {@code key} in "t" as of the standby's snapshot for sender snapshot {@code senderId}. */
    private static byte[] asOf(Varve standby, Path target, long senderId, byte[] key) {
        try (dev.varve.engine.SnapshotView v = standby.asOf(Standby.localSnapshot(target, senderId).orElseThrow())) {
            return v.table("t").get(key);
        }
    }

    /**
     * A SNAPSHOT frame repeating a sender snapshot id the stream already carried (a replayed frame, a spliced
     * stream) was declared again and mapped: the map's later line won, so the standby "as of" that sender snapshot
     * showed writes made after it. Sender ids only grow (each declaration takes the next under the checkpoint write
     * lock), so a repeated or lower one is refused, and the map keeps the right snapshot.
     */
    @Test
    void aRepeatedSnapshotIdIsRefusedAndTheMapKeepsTheRightSnapshot() throws Exception {
        CompletableFuture<BackupResult> run = followWithImage();
        byte[] key = bytes("followed");
        put(100, "t", partitionOf(key), key, bytes("v1"));
        declare(101, snapshot + 1);
        put(102, "t", partitionOf(key), key, bytes("v2"));
        declare(103, snapshot + 1); // again, with a later LSN
        String m = failure(run);
        assertTrue(m.contains("snapshot " + (snapshot + 1)), m);
        withStandby(s -> {
            assertArrayEquals(bytes("v1"), asOf(s, target, snapshot + 1, key));
            assertEquals(null, asOf(s, target, snapshot, key));
            assertArrayEquals(bytes("v2"), s.table("t").get(key));
        });
    }

    /**
     * A write carrying an LSN at or below that of a declaration the stream already carried was logged before that
     * declaration (a replayed or spliced frame), and applying it after would put an old value over a newer one:
     * refused, nothing of it applied. So is one at or below the last LSN of a partition it writes (calls for one
     * partition come in WAL order), and a declaration whose LSN is not above every one before it.
     */
    @Test
    void aFrameLoggedBeforeWhatTheStandbyAlreadyAppliedIsRefused() throws Exception {
        for (String replay : new String[] {"across a snapshot", "within a partition", "a snapshot before a write"}) {
            try (FakeSender s = new FakeSender()) {
                sender.close();
                sender = s;
                target = dir.resolve("standby-" + replay.replace(' ', '-'));
                CompletableFuture<BackupResult> run = followWithImage();
                byte[] key = bytes("followed");
                int p = partitionOf(key);
                put(100, "t", p, key, bytes("v1"));
                put(110, "t", p, key, bytes("v2"));
                switch (replay) {
                    case "across a snapshot" -> {
                        declare(120, snapshot + 1);
                        put(100, "t", p, key, bytes("v1"));
                    }
                    case "within a partition" -> put(100, "t", p, key, bytes("v1"));
                    default -> declare(105, snapshot + 1);
                }
                String m = failure(run);
                assertTrue(m.contains("LSN"), replay + ": " + m);
                withStandby(st -> assertArrayEquals(bytes("v2"), st.table("t").get(key), replay));
            }
        }
    }

    /**
     * What an honest sender does is taken: writes to different partitions interleave with their LSNs out of order
     * between two declarations (each partition in WAL order), and a RANK raises a snapshot.
     */
    @Test
    void interleavedPartitionsBetweenDeclarationsAreTaken() throws Exception {
        CompletableFuture<BackupResult> run = followWithImage();
        byte[] a = bytes("a");
        int pa = partitionOf(a);
        byte[] b = bytes("b");
        for (int i = 0; partitionOf(b) == pa; i++) b = bytes("b" + i);
        int pb = partitionOf(b);
        put(105, "t", pa, a, bytes("a1"));
        put(101, "t", pb, b, bytes("b1")); // another partition, logged earlier, delivered later
        declare(110, snapshot + 1);
        sender.send(ShipProtocol.RANK, f -> f.writeLong(111).writeLong(snapshot + 1).writeInt(2));
        put(112, "t", pa, a, bytes("a2"));
        sender.send(ShipProtocol.ERROR, e -> Frame.writeString(e, "that is all"));
        String m = failure(run);
        assertTrue(m.contains("that is all"), m);
        byte[] bKey = b;
        withStandby(s -> {
            assertArrayEquals(bytes("a1"), asOf(s, target, snapshot + 1, a));
            assertArrayEquals(bytes("b1"), asOf(s, target, snapshot + 1, bKey));
            assertArrayEquals(bytes("a2"), s.table("t").get(a));
        });
    }

    /**
     * A PARTITION_DESTROYED for a table the standby does not have: a sender announces every table before its first
     * record (the image, or TABLE_CREATED), so this is a stream that does not follow the image. Refused, and the
     * standby gets no such table.
     */
    @Test
    void aPartitionDestroyedOfATableTheStandbyLacksIsRefused() throws Exception {
        CompletableFuture<BackupResult> run = followWithImage();
        byte[] key = bytes("followed");
        put(100, "t", partitionOf(key), key, bytes("v1"));
        sender.send(ShipProtocol.PARTITION_DESTROYED, f -> {
            f.writeLong(101);
            Frame.writeString(f, "nothere");
            f.writeInt(0);
        });
        String m = failure(run);
        assertTrue(m.contains("nothere"), m);
        withStandby(s -> {
            assertFalse(s.tables().contains("nothere"), "the standby got a table no sender created: " + s.tables());
            assertArrayEquals(bytes("v1"), s.table("t").get(key));
        });
    }

    /**
     * A write into a table the standby does not have, into a partition the key does not hash to, or into a partition
     * out of range is refused whole by the standby's own checks (nothing of its batch applied), ending the follow with
     * the reason; the standby keeps every write before it.
     */
    @Test
    void aWriteThatDoesNotFitTheStandbyIsRefusedWhole() throws Exception {
        for (String wrong : new String[] {"no such table", "wrong partition", "partition out of range"}) {
            try (FakeSender s = new FakeSender()) {
                sender.close();
                sender = s;
                target = dir.resolve("standby-" + wrong.replace(' ', '-'));
                CompletableFuture<BackupResult> run = followWithImage();
                byte[] good = bytes("good");
                byte[] bad = bytes("bad");
                put(100, "t", partitionOf(good), good, bytes("v1"));
                sender.send(ShipProtocol.CHANGES, f -> {
                    f.writeLong(101).writeInt(2);
                    Frame.writeString(f, "t"); // a sound first change, which must not be applied either
                    f.writeInt(partitionOf(good)).writeShort(good.length).writeBytes(good).writeInt(2).writeBytes(bytes("v2"));
                    Frame.writeString(f, wrong.equals("no such table") ? "nothere" : "t");
                    int n = source.table("t").partitions();
                    int p = wrong.equals("wrong partition") ? (partitionOf(bad) + 1) % n : wrong.equals("partition out of range") ? n : partitionOf(bad);
                    f.writeInt(p).writeShort(bad.length).writeBytes(bad).writeInt(2).writeBytes(bytes("v2"));
                });
                String m = failure(run);
                assertTrue(m.contains(wrong.equals("no such table") ? "nothere" : "partition"), wrong + ": " + m);
                withStandby(st -> {
                    assertArrayEquals(bytes("v1"), st.table("t").get(good), wrong);
                    assertEquals(null, st.table("t").get(bad), wrong);
                    assertFalse(st.tables().contains("nothere"), wrong);
                });
            }
        }
    }
}
