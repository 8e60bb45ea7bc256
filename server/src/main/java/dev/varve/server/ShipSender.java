package dev.varve.server;

import dev.varve.core.store.PageChecksum;
import dev.varve.engine.ChangeFeed;
import dev.varve.engine.SnapshotInfo;
import dev.varve.engine.SnapshotImage;
import dev.varve.engine.SnapshotNotFoundException;
import dev.varve.engine.Varve;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.util.concurrent.ScheduledFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * The sending side of one shipping connection: on the client's HELLO it opens {@code asOf(id)} and streams the image
 * from a shipping thread (never the event loop: reading history may wait for the disk).
 *
 * <p>The image is the snapshot's pages ({@link SnapshotImage}), read past the store's page memory: the writers' cached
 * pages are not evicted by it.
 *
 * <p>Flow control: the thread writes a frame only while the channel is writable, i.e. while less than the high
 * write-buffer watermark is queued, and otherwise waits for {@link #channelWritabilityChanged}. A slow receiver
 * therefore holds the sender to about one watermark plus one frame of heap, and slows only this thread: the
 * store's writers never wait for the network, only for the page latches the as-of reads take like any reader. A
 * receiver that reads nothing for {@code stallNanos} is cut off.
 *
 * <p>Follow mode (writes allowed only: it declares a snapshot) streams, after the image, every change the store
 * commits, through a bounded {@link ChangeQueue}.
 */
final class ShipSender extends SimpleChannelInboundHandler<Frame> {
    private static final Logger LOG = LoggerFactory.getLogger(ShipSender.class);

    /** Declarations a follow tries before it gives up on a snapshot dropped before its image was open. */
    static final int FOLLOW_ATTEMPTS = 10;

    private final Varve store;
    private final Executor shipThreads;
    private final ShipCounters counters;
    private final long stallNanos;
    private final long helloNanos;
    private final boolean allowFollow;
    private final long followBufferBytes;
    private final Runnable beforeFollowImage;
    private final Object writability = new Object();
    private boolean started;
    /** Closes the connection unless its first frame is in by then (event loop only). */
    private ScheduledFuture<?> helloDeadline;
    private volatile Throwable writeFailure;

    ShipSender(Varve store, Executor shipThreads, ShipCounters counters, ServerOptions options) {
        this.store = store;
        this.shipThreads = shipThreads;
        this.counters = counters;
        this.stallNanos = options.shipStallTimeout().toNanos();
        this.helloNanos = options.idleTimeout().toNanos();
        this.allowFollow = options.allowWrites();
        this.followBufferBytes = options.followBufferBytes();
        this.beforeFollowImage = options.beforeFollowImage();
    }

    /**
     * Starts the HELLO deadline (the idle timeout, from when the protocol was sniffed): fixed, so a client trickling
     * its HELLO a byte at a time cannot hold a connection slot for longer.
     */
    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        long seconds = TimeUnit.NANOSECONDS.toSeconds(helloNanos);
        helloDeadline = ctx.executor().schedule(() -> fail(ctx.channel(), "no HELLO within " + seconds + " s"), helloNanos, TimeUnit.NANOSECONDS);
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, Frame frame) {
        cancelHelloDeadline(); // whatever this frame is, it ends the wait: it starts a transfer or fails the connection
        if (started) {
            fail(ctx.channel(), "unexpected " + ShipProtocol.typeName(frame.type) + " frame during a transfer");
            return;
        }
        if (frame.type != ShipProtocol.HELLO) {
            fail(ctx.channel(), "a shipping connection must start with HELLO, got " + ShipProtocol.typeName(frame.type));
            return;
        }
        if (frame.payload.readableBytes() < 16) {
            fail(ctx.channel(), "a HELLO carries 16 bytes (version, snapshot id, flags), this one " + frame.payload.readableBytes());
            return;
        }
        int version = frame.payload.readInt();
        long id = frame.payload.readLong();
        boolean follow = (frame.payload.readInt() & ShipProtocol.FOLLOW) != 0;
        if (version != ShipProtocol.VERSION) {
            fail(ctx.channel(), "shipping protocol version " + Integer.toUnsignedString(version) + " is not supported (this server speaks " + ShipProtocol.VERSION + ")");
            return;
        }
        if (follow && !allowFollow) {
            fail(ctx.channel(), "follow mode declares a snapshot on the sender, and this server is read-only; start it with writes allowed");
            return;
        }
        started = true;
        Channel ch = ctx.channel();
        try {
            shipThreads.execute(() -> serve(ch, id, follow));
        } catch (RejectedExecutionException e) {
            fail(ch, "the server is busy with the maximum number of transfers; try again later");
        }
    }

    private void serve(Channel ch, long id, boolean follow) {
        if (!ch.isActive()) return; // closed meanwhile (the server closing): declare nothing, read nothing
        try {
            if (follow) {
                follow(ch);
            } else {
                shipImage(ch, id);
                ch.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE); // after END went out
            }
        } catch (SnapshotNotFoundException | IllegalArgumentException e) {
            fail(ch, e.getMessage());
        } catch (ReceiverGone e) {
            LOG.info("transfer to {} cut: {}", ch.remoteAddress(), e.getMessage());
            ch.close();
        } catch (RuntimeException e) {
            LOG.warn("transfer to {} failed", ch.remoteAddress(), e);
            // the message names the file and offset where the store failed; the class and stack are for the log
            fail(ch, "the sender failed: " + (e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName()) + " (the server log has the details)");
        }
    }

    /**
     * Follow mode: declares a snapshot and subscribes to the changes after it in one instant, ships its image, then
     * the changes as they commit, until the receiver goes or falls too far behind.
     */
    private void follow(Channel ch) {
        for (int attempt = 1; ; attempt++) {
            ChangeQueue queue = new ChangeQueue(followBufferBytes);
            try (ChangeFeed feed = store.follow(1, queue)) {
                SnapshotImage image;
                beforeFollowImage.run();
                try {
                    image = SnapshotImage.open(store, feed.snapshot());
                } catch (SnapshotNotFoundException dropped) {
                    // a sender whose policy keeps few rank-1 snapshots, declaring often, may drop this one before its image
                    // is open (the open image holds it): nothing went out yet, so declare another
                    if (attempt < FOLLOW_ATTEMPTS) continue;
                    throw new SnapshotNotFoundException("the snapshot a follow declares was dropped by the retention policy before its image"
                            + " could be opened, " + FOLLOW_ATTEMPTS + " times: " + dropped.getMessage());
                }
                follow(ch, queue, image);
                return;
            }
        }
    }

    /** Ships the image (and closes it), then the changes after it until the stream ends. */
    private void follow(Channel ch, ChangeQueue queue, SnapshotImage image) {
        shipImage(ch, image);
        counters.followStarted();
        try {
            streamChanges(ch, queue);
        } finally {
            counters.followEnded();
        }
    }

    /** Sends the follow frames {@code queue} takes, heartbeats while it has none, until the stream ends. */
    private void streamChanges(Channel ch, ChangeQueue queue) {
        long sequence = 0; // of the follow frames, from 1 on
        while (true) {
            List<byte[]> bodies;
            try {
                bodies = queue.take(1000, ShipProtocol.FRAME_TARGET_BYTES);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ReceiverGone("the shipping thread was interrupted");
            }
            String overflow = queue.overflow();
            if (overflow != null) {
                fail(ch, overflow + "; the follow stream ends (the standby holds everything up to here; follow again into a new"
                        + " directory to reseed)");
                return;
            }
            if (bodies.isEmpty()) {
                if (storeClosed()) { // nothing will come any more: tell the standby instead of beating on forever
                    fail(ch, "the sender's store was closed; the follow stream ends (the standby holds everything the sender"
                            + " committed up to here; follow again into a new directory once it is back)");
                    return;
                }
                bodies = List.of(new byte[]{ShipProtocol.HEARTBEAT});
            }
            for (byte[] body : bodies) {
                ByteBuf f = Frame.start(ch.alloc(), body[0], ShipProtocol.SEQUENCE_BYTES + body.length - 1);
                f.writeLong(++sequence); // a frame left out or repeated on the way shows as a gap (LSNs have gaps of their own)
                f.writeBytes(body, 1, body.length - 1);
                ByteBuf done = Frame.finish(f);
                counters.changesSent(done.readableBytes());
                send(ch, done);
            }
        }
    }

    /** Whether the store was closed under the follow (its calls then say so; none is cheaper than listing snapshots). */
    private boolean storeClosed() {
        try {
            store.snapshots();
            return false;
        } catch (IllegalStateException closed) {
            return true;
        }
    }

    /**
     * Ships the page image of snapshot {@code id}: HEADER, the tables, PAGES frames of runs of consecutive pages, END.
     * Each page is read straight into the frame being filled; a frame goes out when it is full or the next page does
     * not continue its run.
     */
    private void shipImage(Channel ch, long id) {
        shipImage(ch, SnapshotImage.open(store, id));
    }

    /** Ships {@code image} as {@link #shipImage(Channel, long)} does, and closes it; counts it as sent or failed. */
    private void shipImage(Channel ch, SnapshotImage image) {
        counters.imageStarted();
        boolean sent = false;
        try {
            sendImage(ch, image);
            sent = true;
        } finally {
            counters.imageEnded(sent);
        }
    }

    private void sendImage(Channel ch, SnapshotImage image) {
        long id = image.snapshot();
        try (image) {
            send(ch, header(ch, image));
            ImageDigest digest = new ImageDigest();
            for (SnapshotImage.TableImage t : image.tables()) {
                ByteBuf f = Frame.start(ch.alloc(), ShipProtocol.TABLE, 64);
                Frame.writeString(f, t.name());
                ShipProtocol.writeOptions(f, t.options());
                f.writeLong(t.entries());
                send(ch, Frame.finish(f));
                digest.table(t.name(), t.options(), t.entries());
            }
            int pageSize = image.pageSize();
            int perFrame = ShipProtocol.pagesPerSentFrame(pageSize);
            ByteBuf frame = null;
            int runFile = -1;
            int runNext = -1;
            int count = 0;
            try {
                while (image.hasNext()) {
                    if (frame != null && (count == perFrame || image.nextFileId() != runFile || image.nextIndex() != runNext)) {
                        ByteBuf full = frame;
                        frame = null;
                        sendPages(ch, full, runFile, runNext - count, count, pageSize);
                    }
                    if (frame == null) {
                        frame = Frame.startDirect(ch.alloc(), ShipProtocol.PAGES, ShipProtocol.PAGES_RUN_BYTES + perFrame * pageSize)
                                .writeZero(ShipProtocol.PAGES_RUN_BYTES);
                        runFile = image.nextFileId();
                        runNext = image.nextIndex();
                        count = 0;
                    }
                    ByteBuffer page = frame.nioBuffer(frame.writerIndex(), pageSize);
                    int at = page.position();
                    image.next(page); // the page is read straight into the frame
                    frame.writerIndex(frame.writerIndex() + pageSize);
                    digest.page(runFile, runNext, PageChecksum.stored(page, at));
                    runNext++;
                    count++;
                }
                if (frame != null) {
                    ByteBuf last = frame;
                    frame = null;
                    sendPages(ch, last, runFile, runNext - count, count, pageSize);
                }
            } finally {
                if (frame != null) frame.release();
            }
            ByteBuf end = Frame.start(ch.alloc(), ShipProtocol.END, 16);
            end.writeLong(digest.pages()).writeInt(digest.tables()).writeInt(digest.crc());
            send(ch, Frame.finish(end));
            LOG.info("shipped snapshot {} to {}: {} tables, {} entries, {} pages", id, ch.remoteAddress(), digest.tables(), digest.entries(), digest.pages());
        }
    }

    private ByteBuf header(Channel ch, SnapshotImage image) {
        SnapshotInfo info = null;
        for (SnapshotInfo s : store.snapshots()) if (s.id() == image.snapshot()) info = s;
        ByteBuf h = Frame.start(ch.alloc(), ShipProtocol.HEADER, 64);
        h.writeLong(image.snapshot()).writeInt(info == null ? 0 : info.rank()).writeLong(info == null ? 0 : info.declared().toEpochMilli());
        h.writeInt(image.pageSize()).writeInt(store.config().partitions());
        Frame.writeString(h, store.config().recoveryMode().name());
        h.writeLong(image.pageCount());
        // what bounds a write here, beyond the page size: a standby needs as much to take every write this store takes
        h.writeLong(store.config().dataRegionSize()).writeLong(store.config().walSegmentSize());
        return Frame.finish(h);
    }

    /** Fills in a PAGES frame's header (room for it was left after the type), sends it and counts its pages as sent. */
    private void sendPages(Channel ch, ByteBuf frame, int fileId, int firstIndex, int count, int pageSize) {
        int at = frame.readerIndex() + ShipProtocol.LENGTH_BYTES + 1;
        frame.setInt(at, fileId).setInt(at + 4, firstIndex).setInt(at + 8, count);
        send(ch, Frame.finish(frame));
        counters.pagesSent((long) count * pageSize);
    }

    /** Writes a finished frame once the channel can take it; the frame is released whatever happens. */
    private void send(Channel ch, ByteBuf frame) {
        try {
            awaitWritable(ch);
        } catch (RuntimeException e) {
            frame.release();
            throw e;
        }
        ch.writeAndFlush(frame).addListener(f -> {
            if (!f.isSuccess()) writeFailure = f.cause();
        });
    }

    private void awaitWritable(Channel ch) {
        long deadline = System.nanoTime() + stallNanos;
        synchronized (writability) {
            while (!ch.isWritable()) {
                if (!ch.isActive()) throw new ReceiverGone("the connection closed");
                long left = deadline - System.nanoTime();
                if (left <= 0) throw new ReceiverGone("the receiver read nothing for " + TimeUnit.NANOSECONDS.toSeconds(stallNanos) + " s");
                try {
                    writability.wait(Math.max(1, Math.min(100, TimeUnit.NANOSECONDS.toMillis(left))));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new ReceiverGone("the shipping thread was interrupted");
                }
            }
        }
        Throwable f = writeFailure;
        if (f != null) throw new ReceiverGone("a write failed: " + f);
        if (!ch.isActive()) throw new ReceiverGone("the connection closed");
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        synchronized (writability) {
            writability.notifyAll();
        }
        ctx.fireChannelWritabilityChanged();
    }

    private void cancelHelloDeadline() {
        if (helloDeadline != null) helloDeadline.cancel(false);
        helloDeadline = null;
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        cancelHelloDeadline();
        synchronized (writability) {
            writability.notifyAll();
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        LOG.info("shipping connection from {} failed: {}", ctx.channel().remoteAddress(), cause.toString());
        fail(ctx.channel(), "bad request: " + cause.getMessage());
    }

    /** Sends an ERROR frame with {@code message} and closes the connection. */
    private static void fail(Channel ch, String message) {
        if (!ch.isActive()) return;
        ByteBuf e = Frame.start(ch.alloc(), ShipProtocol.ERROR, 128);
        Frame.writeString(e, message.length() > 4000 ? message.substring(0, 4000) : message);
        ch.writeAndFlush(Frame.finish(e)).addListener(ChannelFutureListener.CLOSE);
    }

    /** The receiver went away or stopped reading: the transfer ends, nothing to tell it. */
    private static final class ReceiverGone extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ReceiverGone(String message) {
            super(message, null, false, false);
        }
    }
}
