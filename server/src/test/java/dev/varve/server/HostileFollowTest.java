package dev.varve.server;

import dev.varve.config.RecoveryMode;
import dev.varve.core.io.UnforcedFileIOFactory;
import dev.varve.engine.SnapshotImage;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The standby's receiver against follow streams a Varve server never sends (frames replayed, spliced, out of its LSN
 * or snapshot-id order, malformed with their CRCs right): refused, with nothing of the frame applied and the standby
 * left openable at its last good point.
 */
@Timeout(120)
class HostileFollowTest extends HostileSenderFixture {
    /** {@link #followWithImage} from a new sender into a new standby directory {@code name}: one case of several in a test. */
    private CompletableFuture<BackupResult> followAnew(String name) throws Exception {
        anew(name);
        return followWithImage();
    }

    /**
     * Starts a follow against the fake sender, ships it the whole image, and waits until the standby is in place,
     * beating as a Varve sender does: the standby's open (a data region of at least the default 256 MiB, zero-filled)
     * outlasted the 10 s idle timeout on a loaded 2-core VM, and the receiver hung up on the test ("Broken pipe").
     */
    private CompletableFuture<BackupResult> followWithImage() throws Exception {
        return followWithImage(new SnapshotBackup(sender.address(), 1, target).follow(true).idleTimeout(Duration.ofSeconds(10)),
                () -> sender.send(ShipProtocol.HEARTBEAT, f -> { }));
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
        try (Varve standby = Varve.open(SmallStore.config(target).build(), UnforcedFileIOFactory.INSTANCE)) {
            check.accept(standby);
        }
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
        try (Varve copy = Varve.open(SmallStore.config(target).recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE).build(), UnforcedFileIOFactory.INSTANCE)) {
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

    /**
     * A follow frame left out on the way went unseen (LSNs have gaps of their own: a write's LSN is where its record
     * starts in the WAL), and so did one repeated after a later write to other partitions: follow frames carry
     * consecutive sequence numbers, and one out of turn is refused, nothing of it applied.
     */
    @Test
    void aFollowFrameLeftOutOrRepeatedIsRefused() throws Exception {
        for (String fault : new String[] {"left out", "repeated"}) {
            CompletableFuture<BackupResult> run = followAnew("standby-" + fault.replace(' ', '-'));
            byte[] a = bytes("a");
            byte[] b = bytes("b");
            put(100, "t", partitionOf(a), a, bytes("v1"));
            long next = sender.followFrames + 1; // after the heartbeats the standby's open took
            sender.followFrames += fault.equals("left out") ? 1 : -1;
            put(200, "t", partitionOf(b), b, bytes("v2"));
            String m = failure(run);
            assertTrue(m.contains("where frame " + next + " comes next (" + (fault.equals("left out") ? "1 left out" : "a repeat")), fault + ": " + m);
            withStandby(s -> {
                assertArrayEquals(bytes("v1"), s.table("t").get(a));
                assertEquals(null, s.table("t").get(b));
            });
        }
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
            CompletableFuture<BackupResult> run = followAnew("standby-" + replay.replace(' ', '-'));
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
            CompletableFuture<BackupResult> run = followAnew("standby-" + wrong.replace(' ', '-'));
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
