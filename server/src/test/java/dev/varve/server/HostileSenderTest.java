package dev.varve.server;

import dev.varve.config.RecoveryMode;
import dev.varve.core.page.PageHeader;
import dev.varve.core.store.PageChecksum;
import dev.varve.engine.SnapshotImage;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The receiver ({@link SnapshotBackup}) against a sender that is not a Varve server, or a broken one, for images and
 * targets: a {@link FakeSender} speaking the wire format with a real snapshot's pages, and sending what a Varve server
 * never sends. Whatever it sends, the receiver writes nothing outside its target, allocates no more than the bytes it
 * was sent call for, fails with a message that says what was wrong, and leaves the target unfinished (never a store
 * that opens with wrong data).
 */
@Timeout(120)
class HostileSenderTest extends HostileSenderFixture {
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
        try (Varve copy = Varve.open(SmallStore.config(target).recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE).build())) {
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
        String m = failureOfImageEdited((fileId, index, page) -> {
            if (fileId == 0 && index == 0) { // the catalog's meta page: its height (at byte 52) two billion
                page.duplicate().order(ByteOrder.LITTLE_ENDIAN).putInt(52, Integer.MAX_VALUE);
                PageChecksum.stamp(page, 0, page.remaining());
            }
        });
        assertTrue(m.contains("height") && !m.contains("OutOfMemoryError"), m);
    }

    /**
     * The catalog's leaves are read too: a catalog entry (nine bytes) whose cell claims a value of two billion bytes
     * made the reader allocate that before it followed the value's overflow chain (an OutOfMemoryError). The received
     * catalog is checked whole, as {@code varve verify} checks a tree, before anything reads it: refused as damaged.
     */
    @Test
    void aCatalogEntryClaimingAHugeValueIsRefusedBeforeItSizesAnything() throws Exception {
        boolean[] forged = {false};
        String m = failureOfImageEdited((fileId, index, page) -> {
            ByteBuffer le = page.duplicate().order(ByteOrder.LITTLE_ENDIAN);
            if (fileId == 0 && le.getShort(PageHeader.TYPE_OFFSET) == PageHeader.TYPE_LEAF && le.getShort(PageHeader.SIZE) > 0) {
                int cell = le.getShort(48); // slot 0: its cell's offset; the cell holds key length (u16), value length (i32), key
                le.putInt(cell + 2, Integer.MAX_VALUE - 16);
                PageChecksum.stamp(page, 0, page.remaining());
                forged[0] = true;
            }
        });
        assertTrue(forged[0], "the catalog has a leaf with an entry");
        assertTrue(m.contains("catalog") && !m.contains("OutOfMemoryError"), m);
    }

    /**
     * A PAGES frame's CRC covers only where its pages go, and each page carries its own: a page whose bytes changed on
     * the way, its CRC stamped to match, passed every check and went into the backup as it came. The END digest now
     * covers each page's CRC as the sender read it: refused, the target stays unfinished.
     */
    @Test
    void aPageChangedOnTheWayWithACrcToMatchIsRefusedByTheEndDigest() throws Exception {
        ImageDigest honest;
        try (SnapshotImage image = SnapshotImage.open(source, snapshot)) {
            honest = FakeSender.digestOf(image);
        }
        boolean[] forged = {false};
        CompletableFuture<BackupResult> run = start(backup());
        try (SnapshotImage image = SnapshotImage.open(source, snapshot)) {
            sender.accept();
            sender.header(image, 1, MODE, 64L << 20);
            sender.tables(image, new ImageDigest());
            sender.allPages(image, new ImageDigest(), (fileId, index, page) -> {
                if (!forged[0] && fileId != 0 && index > 0) { // a data page of table t: its last byte is a value's
                    int last = page.limit() - 1;
                    page.put(last, (byte) (page.get(last) ^ 1));
                    PageChecksum.stamp(page, page.position(), page.remaining());
                    forged[0] = true;
                }
            });
            sender.end(honest);
        }
        assertTrue(forged[0], "a page was changed");
        String m = failure(run);
        assertTrue(m.contains("does not match what the sender sent"), m);
        assertUnfinished();
    }

    /** Ships the whole image, each page through {@code edit} first, and returns why the transfer failed; the target stays unfinished. */
    private String failureOfImageEdited(FakeSender.PageEdit edit) throws Exception {
        CompletableFuture<BackupResult> run = start(backup());
        String m;
        try (SnapshotImage image = SnapshotImage.open(source, snapshot)) {
            sender.accept();
            sender.header(image, 1, MODE, 64L << 20);
            ImageDigest digest = new ImageDigest();
            sender.tables(image, digest);
            sender.allPages(image, digest, edit);
            sender.end(digest);
            m = failure(run);
        }
        assertUnfinished();
        return m;
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
            // the CRC failure ends the transfer as it is read, maybe before the applier wrote the frames ahead of it
            if (m.contains("was removed")) assertRemoved(m);
            else assertUnfinished();
        }
        sender.close();
        sender = new FakeSender();
        CompletableFuture<BackupResult> again = start(backup());
        try (SnapshotImage image = SnapshotImage.open(source, snapshot)) {
            sender.accept();
            sender.image(image, MODE);
        }
        assertEquals(snapshot, again.get(60, TimeUnit.SECONDS).snapshotId());
        try (Varve copy = Varve.open(SmallStore.config(target).recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE).build())) {
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
                    digest.page(fileId, index, PageChecksum.stored(page, 0)); // the sender's digest counts every page
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
     * timeout, with a message that says so; nothing of the image arrived, so the target it created is removed.
     */
    @Test
    void aSilentSenderIsGivenUpOnAfterTheIdleTimeout() throws Exception {
        for (boolean halfAFrame : new boolean[] {false, true}) {
            sender.close();
            sender = new FakeSender();
            CompletableFuture<BackupResult> run = start(new SnapshotBackup(sender.address(), snapshot, target).idleTimeout(Duration.ofSeconds(1)));
            sender.accept();
            if (halfAFrame) sender.sendRaw(new byte[] {0, 0, 0, 100, ShipProtocol.HEADER, 0, 0});
            String m = failure(run);
            assertTrue(m.contains("nothing arrived from the sender for 1 s"), m);
            assertRemoved(m);
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
        String refusal = "shipping protocol version " + sender.helloVersion + " is not supported (this server speaks 3)"; // a server of an earlier build
        sender.send(ShipProtocol.ERROR, e -> Frame.writeString(e, refusal));
        String m = failure(run);
        assertTrue(m.startsWith("the sender refused: " + refusal + "; "), m);
        assertRemoved(m);
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
            sender.sendRaw((byte[]) peer[0]);
            String m = failure(run);
            // what came, not an idle timeout's message: the receiver judged the bytes instead of waiting for more
            assertTrue(m.contains((String) peer[1]), m);
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
     * know, a page size it does not take; a data region or WAL segment size no store has, which a follow's standby
     * would take) is refused naming what it said, before anything of the image is written: the target it created is
     * removed again.
     */
    @Test
    void aHeaderThisBuildCannotTakeIsRefusedNamingWhatItSaid() throws Exception {
        long tooLargeRegion = 2L << 40;
        long tooLargeSegment = (1L << 30) + 4096;
        for (String what : new String[] {"recovery mode", "page size", "data region size", "WAL segment size"}) {
            sender.close();
            sender = new FakeSender();
            CompletableFuture<BackupResult> run = start(backup());
            sender.accept();
            sender.send(ShipProtocol.HEADER, h -> {
                h.writeLong(snapshot).writeInt(1).writeLong(0).writeInt(what.equals("page size") ? 3000 : 4096).writeInt(4);
                Frame.writeString(h, what.equals("recovery mode") ? "WAL_QUANTUM" : MODE);
                h.writeLong(10).writeLong(what.equals("data region size") ? tooLargeRegion : 64L << 20)
                        .writeLong(what.equals("WAL segment size") ? tooLargeSegment : 64L << 20);
            });
            String m = failure(run);
            String said = switch (what) {
                case "recovery mode" -> "WAL_QUANTUM";
                case "page size" -> "3000";
                case "data region size" -> "dataRegionSize must be in [8 MiB, 1 TiB], was " + tooLargeRegion;
                default -> "walSegmentSize must be in [4 MiB, 1 GiB], was " + tooLargeSegment;
            };
            assertTrue(m.contains("HEADER") && m.contains(said), what + ": " + m);
            assertFalse(m.contains("No enum constant"), m);
            assertRemoved(m);
        }
    }

    /**
     * A HEADER without the sizes that later builds of the protocol's version added at its end (the data region's, the
     * WAL segments'): a sender of an earlier build, whose image is taken, with the default sizes in their place.
     */
    @Test
    void aHeaderOfAnEarlierBuildWithoutTheSizesIsTaken() throws Exception {
        CompletableFuture<BackupResult> run = start(backup());
        try (SnapshotImage image = SnapshotImage.open(source, snapshot)) {
            sender.accept();
            sender.send(ShipProtocol.HEADER, h -> {
                h.writeLong(image.snapshot()).writeInt(1).writeLong(0).writeInt(image.pageSize()).writeInt(4);
                Frame.writeString(h, MODE);
                h.writeLong(image.pageCount());
            });
            ImageDigest digest = new ImageDigest();
            sender.tables(image, digest);
            sender.allPages(image, digest);
            sender.end(digest);
        }
        assertEquals(snapshot, run.get(60, TimeUnit.SECONDS).snapshotId());
        try (Varve copy = Varve.open(SmallStore.config(target).recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE).build())) { // default segments
            assertEquals(100 + 1999 % 300, copy.table("t").get(bytes("key-1999")).length);
        }
    }

    /**
     * Frames announcing the largest length the receiver takes, whose bytes never come: nothing is allocated up front
     * (the frame is gathered as its bytes arrive), and the idle timeout ends the wait.
     */
    @Test
    void aFrameAnnouncedButNeverSentAllocatesNothingAndTimesOut() throws Exception {
        CompletableFuture<BackupResult> run = start(new SnapshotBackup(sender.address(), snapshot, target).idleTimeout(Duration.ofSeconds(1)));
        sender.accept();
        int length = ShipProtocol.MAX_FRAME_BYTES;
        sender.sendRaw(new byte[] {(byte) (length >>> 24), (byte) (length >>> 16), (byte) (length >>> 8), (byte) length, ShipProtocol.HEADER});
        String m = failure(run);
        assertTrue(m.contains("nothing arrived from the sender for 1 s"), m);
    }

    // ------------------------------------------------------------------ follow mode
}
