package dev.varve.server;

import dev.varve.config.ConfigLimits;
import dev.varve.core.store.PageChecksum;
import dev.varve.engine.SnapshotImage;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A sender that is not a {@link VarveServer}: a plain loopback {@link ServerSocket} a test drives frame by frame, to
 * run the real receiver ({@link SnapshotBackup}) against streams a Varve server never sends. It speaks the wire
 * format as {@link ShipProtocol} and {@link Frame} define it, so what it sends passes the receiver's framing and
 * CRC checks unless the test damages it on purpose.
 */
final class FakeSender implements AutoCloseable {
    private final ServerSocket listener;
    private Socket socket;
    private OutputStream out;
    int helloVersion;
    long helloSnapshot;
    int helloFlags;
    /** The sequence number of the last follow frame sent. */
    long followFrames;
    /** When it last sent (or accepted), and the longest it went without sending since it accepted: see {@link #longestSilenceNanos}. */
    private long lastSentNanos;
    private long longestSilenceNanos;

    FakeSender() throws IOException {
        listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        listener.setSoTimeout(30_000);
    }

    InetSocketAddress address() {
        return new InetSocketAddress(InetAddress.getLoopbackAddress(), listener.getLocalPort());
    }

    /** Accepts the receiver's connection and reads its magic and HELLO. */
    FakeSender accept() throws IOException {
        socket = listener.accept();
        socket.setSoTimeout(30_000);
        out = socket.getOutputStream();
        DataInputStream in = new DataInputStream(socket.getInputStream());
        byte[] magic = new byte[4];
        in.readFully(magic);
        assertArrayEquals(ShipProtocol.MAGIC, magic);
        assertEquals(1 + 16 + 4, in.readInt(), "HELLO's length");
        assertEquals(ShipProtocol.HELLO, in.readByte());
        helloVersion = in.readInt();
        helloSnapshot = in.readLong();
        helloFlags = in.readInt();
        in.readInt(); // its CRC
        lastSentNanos = System.nanoTime(); // the receiver's idle timeout runs from its connect, about now
        return this;
    }

    /** A frame of {@code type} whose payload {@code payload} writes, with a correct length and CRC32C. */
    static ByteBuf frame(byte type, Consumer<ByteBuf> payload) {
        ByteBuf f = Frame.start(UnpooledByteBufAllocator.DEFAULT, type, 64);
        payload.accept(f);
        return Frame.finish(f);
    }

    /** The bytes of {@link #frame}{@code (type, payload)}, as a client writes them to its socket. */
    static byte[] frameBytes(byte type, Consumer<ByteBuf> payload) {
        ByteBuf f = frame(type, payload);
        try {
            byte[] bytes = new byte[f.readableBytes()];
            f.readBytes(bytes);
            return bytes;
        } finally {
            f.release();
        }
    }

    /** Sends a finished frame (and releases it). */
    void send(ByteBuf frame) throws IOException {
        try {
            byte[] bytes = new byte[frame.readableBytes()];
            frame.readBytes(bytes);
            sendRaw(bytes);
        } finally {
            frame.release();
        }
    }

    /**
     * Sends a frame of {@code type}; a follow frame (CHANGES to HEARTBEAT) gets the next sequence number first, as
     * {@link ShipSender} numbers them (a test leaves one out by moving {@link #followFrames} on).
     */
    void send(byte type, Consumer<ByteBuf> payload) throws IOException {
        boolean follow = type >= ShipProtocol.CHANGES && type <= ShipProtocol.HEARTBEAT;
        long sequence = follow ? ++followFrames : 0;
        send(frame(type, f -> {
            if (follow) f.writeLong(sequence);
            payload.accept(f);
        }));
    }

    void sendRaw(byte[] bytes) throws IOException {
        long now = System.nanoTime(); // before the write, which fails once the receiver hung up on a silence
        longestSilenceNanos = Math.max(longestSilenceNanos, now - lastSentNanos);
        lastSentNanos = now;
        out.write(bytes);
        out.flush();
    }

    /**
     * The longest the test thread went between two sends (or from {@link #accept} to its first) when it meant to send
     * more often: a stall of that thread (starved of the CPU on a loaded VM, or the whole JVM paused), which a receiver
     * rightly meets with its idle timeout. A test of another rule tells such a run from a failure with it.
     */
    long longestSilenceNanos() {
        return longestSilenceNanos;
    }

    /** HEADER as {@link ShipSender} sends it, of a store with the default WAL segment size. */
    void header(SnapshotImage image, int rank, String recoveryMode, long dataRegionSize) throws IOException {
        send(ShipProtocol.HEADER, h -> {
            h.writeLong(image.snapshot()).writeInt(rank).writeLong(0).writeInt(image.pageSize()).writeInt(4);
            Frame.writeString(h, recoveryMode);
            h.writeLong(image.pageCount()).writeLong(dataRegionSize).writeLong(ConfigLimits.WAL_SEGMENT_SIZE_DEFAULT);
        });
    }

    /** The TABLE frames of {@code image}, summed into {@code digest}. */
    void tables(SnapshotImage image, ImageDigest digest) throws IOException {
        for (SnapshotImage.TableImage t : image.tables()) {
            send(ShipProtocol.TABLE, f -> {
                Frame.writeString(f, t.name());
                ShipProtocol.writeOptions(f, t.options());
                f.writeLong(t.entries());
            });
            digest.table(t.name(), t.options(), t.entries());
        }
    }

    /** One PAGES frame: {@code pages} (whole pages) into file {@code fileId} from {@code first} on. */
    void pages(int fileId, int first, ByteBuffer pages, int pageSize) throws IOException {
        ByteBuf f = Frame.start(UnpooledByteBufAllocator.DEFAULT, ShipProtocol.PAGES, 12 + pages.remaining());
        f.writeInt(fileId).writeInt(first).writeInt(pages.remaining() / pageSize).writeBytes(pages.duplicate());
        send(Frame.finish(f));
    }

    /** A change to a page of an image before it is sent (the editor re-stamps its CRC where it should pass). */
    interface PageEdit {
        void edit(int fileId, int index, ByteBuffer page);
    }

    /** Every page of {@code image}, a frame per page, summed into {@code digest}. */
    void allPages(SnapshotImage image, ImageDigest digest) throws IOException {
        allPages(image, digest, (fileId, index, page) -> { });
    }

    /**
     * Every page of {@code image}, a frame per page, each through {@code edit} first, summed into {@code digest} as
     * edited: a sender that means the pages it sends.
     */
    void allPages(SnapshotImage image, ImageDigest digest, PageEdit edit) throws IOException {
        ByteBuffer page = ByteBuffer.allocateDirect(image.pageSize());
        while (image.hasNext()) {
            int fileId = image.nextFileId();
            int index = image.nextIndex();
            page.clear();
            image.next(page);
            page.flip();
            edit.edit(fileId, index, page);
            pages(fileId, index, page, image.pageSize());
            digest.page(fileId, index, PageChecksum.stored(page, page.position()));
        }
    }

    /** The digest an honest sender sends at the END of {@code image} (which it reads whole). */
    static ImageDigest digestOf(SnapshotImage image) {
        ImageDigest digest = new ImageDigest();
        for (SnapshotImage.TableImage t : image.tables()) digest.table(t.name(), t.options(), t.entries());
        ByteBuffer page = ByteBuffer.allocateDirect(image.pageSize());
        while (image.hasNext()) {
            int fileId = image.nextFileId();
            int index = image.nextIndex();
            image.next(page.clear());
            digest.page(fileId, index, PageChecksum.stored(page, 0));
        }
        return digest;
    }

    void end(ImageDigest digest) throws IOException {
        send(ShipProtocol.END, e -> e.writeLong(digest.pages()).writeInt(digest.tables()).writeInt(digest.crc()));
    }

    /** The whole image, as a Varve server ships it (one page per frame), END included. */
    void image(SnapshotImage image, String recoveryMode) throws IOException {
        header(image, 1, recoveryMode, 64L << 20);
        ImageDigest digest = new ImageDigest();
        tables(image, digest);
        allPages(image, digest);
        end(digest);
    }

    /** Closes the connection (the listener stays until {@link #close}). */
    void hangUp() throws IOException {
        if (socket != null) socket.close();
    }

    @Override
    public void close() throws IOException {
        try {
            hangUp();
        } finally {
            listener.close();
        }
    }
}
