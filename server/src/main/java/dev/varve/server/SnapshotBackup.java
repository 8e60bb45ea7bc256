package dev.varve.server;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.engine.IncomingStore;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Pulls a consistent image of {@code asOf(snapshot)} from a live store served by {@link VarveServer} into a new
 * directory, over one connection:
 * <pre>{@code
 * BackupResult r = new SnapshotBackup(new InetSocketAddress("127.0.0.1", 7070), 42, Path.of("/backups/s42")).run();
 * }</pre>
 * The target becomes an ordinary store equal to the snapshot, and only once every frame arrived, passed its CRC32C and
 * the image verified (see {@link IncomingStore}); until then {@code Varve.open} refuses it. After a failure (a
 * {@link BackupException}, or this process killed) running the same backup again completes it.
 *
 * <p>Flow control: the channel does not read on its own ({@code autoRead} off). Frames go to one applier thread,
 * and the next read is asked for only while less than {@value #MAX_QUEUED_BYTES} bytes of frames wait for it: the
 * network keeps receiving while the applier writes, but a slow disk here stops the reads, fills the TCP window and
 * makes the sender's channel unwritable, so neither side's heap grows with the lag.
 */
public final class SnapshotBackup {
    /** Frames received but not yet applied, at most (plus what one socket read brings). */
    static final long MAX_QUEUED_BYTES = 8L << 20;
    /** The most one socket read brings (an image frame, 1 MiB, in a few of them). */
    static final int MAX_READ_BYTES = 1 << 20;
    /**
     * What a queued frame counts for beyond its payload: the objects that carry it. A HEARTBEAT has no payload, and
     * counted as nothing a stream of them would queue without bound behind a busy applier.
     */
    static final int FRAME_COST_BYTES = 64;

    private final InetSocketAddress from;
    private final long snapshot;
    private final Path target;
    private Duration idleTimeout = Duration.ofSeconds(60);
    private RecoveryMode recoveryMode;
    private ShipProgress progress = (pages, imagePages, bytes) -> { };
    private boolean follow;
    private RankTreePolicy retention; // null: the standby keeps every snapshot it follows
    private int mapRewriteMinLines = StandbyWriter.REWRITE_MIN_LINES;
    private int receiveBufferBytes; // 0: the operating system's autotuning
    private long minReceiveRate = 1024; // bytes a second; 0: no least rate
    private volatile boolean stopping;
    private volatile Channel channel;

    /**
     * A backup of snapshot {@code snapshot} of the store served at {@code from} into the new directory {@code target}
     * (absent, empty, or left unfinished by an earlier run of this backup).
     */
    public SnapshotBackup(InetSocketAddress from, long snapshot, Path target) {
        this.from = Objects.requireNonNull(from, "from");
        if (snapshot < 1) throw new IllegalArgumentException("snapshot id must be >= 1, was " + snapshot);
        this.snapshot = snapshot;
        this.target = Objects.requireNonNull(target, "target");
    }

    /** Gives up when the sender sends nothing for this long (default 60 s; 1 ms to {@link ServerOptions#MAX_DURATION}). */
    public SnapshotBackup idleTimeout(Duration timeout) {
        if (timeout == null || timeout.isNegative() || timeout.isZero()) throw new IllegalArgumentException("idleTimeout must be positive, was " + timeout);
        // counted in milliseconds by the idle handler, for which 0 means no timeout at all; and a longer one overflows there
        if (timeout.compareTo(ServerOptions.MAX_DURATION) > 0 || timeout.toMillis() < 1)
            throw new IllegalArgumentException("idleTimeout must be in [1 ms, " + ServerOptions.MAX_DURATION + "], was " + timeout);
        this.idleTimeout = timeout;
        return this;
    }

    /**
     * The least the sender must send, in bytes a second over each window of twice the idle timeout (default 1024; 0:
     * no least rate): without it a sender sending a byte just inside each idle timeout held the receiver forever. It
     * applies while the image arrives, and after it (a follow) only to a frame under way while no other arrives, an
     * idle follow stream sending nothing but heartbeats; not while the receiver itself holds its reads (its disk
     * behind). The window is twice the idle timeout so that a sender gone silent is told by the idle timeout.
     */
    public SnapshotBackup minReceiveRate(long bytesPerSecond) {
        if (bytesPerSecond < 0) throw new IllegalArgumentException("minReceiveRate must be >= 0 bytes a second, was " + bytesPerSecond);
        this.minReceiveRate = bytesPerSecond;
        return this;
    }

    /**
     * Caps the socket's receive buffer (default: the operating system's autotuning, which on Linux may grow it to
     * {@code net.ipv4.tcp_rmem}'s maximum, 32 MiB here): what is in flight beyond the applier's read-ahead.
     */
    public SnapshotBackup receiveBufferBytes(int bytes) {
        if (bytes < 4096) throw new IllegalArgumentException("receiveBufferBytes must be at least 4096, was " + bytes);
        this.receiveBufferBytes = bytes;
        return this;
    }

    /** The recovery mode of the new store (default: the sender's). */
    public SnapshotBackup recoveryMode(RecoveryMode mode) {
        this.recoveryMode = Objects.requireNonNull(mode, "recoveryMode");
        return this;
    }

    /**
     * Follow mode: the sender (which must allow writes) declares a snapshot, ships its image, then streams every
     * change committed after it; {@link #run} keeps the target as a standby until {@link #stop} or the stream ends.
     * See {@link Standby} for opening it at the latest state or at a sender snapshot.
     */
    public SnapshotBackup follow(boolean v) {
        this.follow = v;
        return this;
    }

    /**
     * Follow mode: the retention policy of the standby's own snapshots, one per sender snapshot, of its rank as far as
     * the policy has levels (default: keep them all, so that the standby and its snapshot map grow with every snapshot
     * the sender declares). Give the standby the same policy again when opening it, as for any store.
     */
    public SnapshotBackup retention(RankTreePolicy policy) {
        this.retention = Objects.requireNonNull(policy, "retention");
        return this;
    }

    /** Tests: the map lines a standby holds before it first rewrites its map ({@link StandbyWriter}), at least 1. */
    SnapshotBackup mapRewriteMinLines(int lines) {
        if (lines < 1) throw new IllegalArgumentException("mapRewriteMinLines must be at least 1, was " + lines);
        this.mapRewriteMinLines = lines;
        return this;
    }

    /**
     * Ends a follow: {@link #run} returns once the change being applied is in; what arrived after it is not applied
     * (the standby is whole after any change). Safe from any thread.
     */
    public void stop() {
        stopping = true;
        Channel ch = channel;
        if (ch != null) ch.close();
    }

    /** Called on the applier thread after each applied frame with the running totals. */
    public SnapshotBackup progress(ShipProgress listener) {
        this.progress = Objects.requireNonNull(listener, "progress");
        return this;
    }

    /**
     * Runs the backup to completion.
     *
     * @throws BackupException if it did not complete: the target stays marked unfinished once part of the image was
     *                         written; a transfer that failed before that (nothing listening, a snapshot the sender does
     *                         not have) leaves the target as it was before, removed when this run created it
     * @throws IllegalArgumentException if the target exists and is neither empty nor an unfinished backup (a standby is
     *                                  neither: a follow cannot be resumed)
     */
    public BackupResult run() {
        long started = System.nanoTime();
        if (java.nio.file.Files.exists(target.resolve(Standby.SNAPSHOT_MAP)))
            throw new IllegalArgumentException(target + " holds the standby of an earlier follow, which cannot be resumed: open it as it is, or back up"
                    + " or follow into a new directory");
        IncomingStore incoming = IncomingStore.prepare(target);
        try {
            return transfer(incoming, started);
        } catch (BackupException e) {
            throw incoming.isHeld() ? unfinished(e, incoming) : e; // not held: committed, so the image is in and the follow failed
        } finally {
            incoming.close(); // the target's lock, when the image was not committed (which let go of it)
        }
    }

    /**
     * The failure of a transfer whose image was not committed, saying what it left: nothing, when nothing of the image
     * was written (the mark is removed), or an unfinished target for a rerun.
     */
    private BackupException unfinished(BackupException e, IncomingStore incoming) {
        String left = "; " + target + " stays unfinished";
        try {
            if (incoming.discardIfEmpty())
                left = "; nothing of the image was written, so " + target + (incoming.createdTarget() ? ", which this backup created, was removed" : " was left as it was before");
        } catch (RuntimeException x) {
            e.addSuppressed(x);
        }
        return new BackupException(e.getMessage() + left, e);
    }

    @SuppressWarnings("deprecation") // RCVBUF_ALLOCATOR: netty 4.2 deprecates it and offers no replacement for the NIO transport
    private BackupResult transfer(IncomingStore incoming, long started) {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        ExecutorService applier = Executors.newSingleThreadExecutor(r -> new Thread(r, "varve-backup-applier"));
        CompletableFuture<BackupResult> result = new CompletableFuture<>();
        ImageWriter writer = new ImageWriter(incoming, recoveryMode, follow);
        Receiver receiver = new Receiver(writer, applier, result, incoming.target(), started);
        try {
            Bootstrap b = new Bootstrap().group(group).channel(NioSocketChannel.class)
                    .option(ChannelOption.AUTO_READ, false)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 10_000)
                    // image frames are 1 MiB: reads of up to 1 MiB (not netty's default 64 KiB) take one in a few calls
                    .option(ChannelOption.RCVBUF_ALLOCATOR, new AdaptiveRecvByteBufAllocator(64 << 10, MAX_READ_BYTES, MAX_READ_BYTES))
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new IdleStateHandler(idleTimeout.toMillis(), 0, 0, TimeUnit.MILLISECONDS));
                            FrameDecoder decoder = new FrameDecoder(ShipProtocol.MAX_FRAME_BYTES);
                            if (minReceiveRate > 0) ch.pipeline().addLast(new ReceiveRateWatch(idleTimeout.multipliedBy(2), minReceiveRate, decoder, receiver));
                            ch.pipeline().addLast(decoder);
                            ch.pipeline().addLast(receiver);
                        }
                    });
            if (receiveBufferBytes > 0) b.option(ChannelOption.SO_RCVBUF, receiveBufferBytes);
            try {
                channel = b.connect(from).sync().channel();
                if (stopping) channel.close();
            } catch (Exception e) {
                throw new BackupException("cannot connect to " + from + ": " + e.getMessage(), e);
            }
            try {
                return result.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new BackupException("interrupted", e);
            } catch (ExecutionException e) {
                Throwable c = e.getCause();
                if (c instanceof BackupException) throw new BackupException(c.getMessage(), c);
                throw new BackupException("backup of snapshot " + snapshot + " from " + from + " failed: " + c, c);
            }
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
            applier.shutdown();
            try {
                applier.awaitTermination(1, TimeUnit.MINUTES);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            writer.close(); // after the applier stopped: it is the stores' only other user
            receiver.closeStandby();
        }
    }

    /** A duration as a message says it: whole seconds as seconds, anything else (300 ms, 1.5 s) in milliseconds. */
    static String said(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
    }

    /**
     * The standby's configuration: the committed image's (whose data region and WAL segments are at least as large as
     * the sender's: see {@link ImageWriter}), with the standby's retention policy.
     */
    private VarveConfig standbyConfig(VarveConfig committed) {
        return retention == null ? committed : committed.toBuilder().retention(retention).build();
    }

    /** The client's handler: HELLO on connect, frames handed to the applier, one read at a time. */
    private final class Receiver extends SimpleChannelInboundHandler<Frame> implements ReceiveRateWatch.Receiver {
        private final ImageWriter writer;
        private final ExecutorService applier;
        private final CompletableFuture<BackupResult> result;
        private final Path finalTarget;
        private final long started;
        private final AtomicLong queuedBytes = new AtomicLong();
        private StandbyWriter standby;
        private BackupResult image;
        private long latestSenderSnapshot;
        /** Event loop only, for the rate watch: whether END arrived, reads were held for the applier since it asked, frames so far. */
        private boolean endReceived;
        private boolean readsHeld;
        private long framesReceived;
        /** The sequence number the next follow frame must carry. */
        private long nextFollowFrame = 1;

        Receiver(ImageWriter writer, ExecutorService applier, CompletableFuture<BackupResult> result, Path finalTarget, long started) {
            super(false); // the applier releases each frame
            this.writer = writer;
            this.applier = applier;
            this.result = result;
            this.finalTarget = finalTarget;
            this.started = started;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            ByteBuf hello = Frame.start(ctx.alloc(), ShipProtocol.HELLO, 16);
            hello.writeInt(ShipProtocol.VERSION).writeLong(snapshot).writeInt(follow ? ShipProtocol.FOLLOW : 0);
            ctx.write(Unpooled.wrappedBuffer(ShipProtocol.MAGIC));
            ctx.writeAndFlush(Frame.finish(hello));
            ctx.read();
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, Frame frame) {
            Channel ch = ctx.channel();
            if (frame.type == ShipProtocol.END) endReceived = true;
            framesReceived++;
            long size = frame.payload.readableBytes() + FRAME_COST_BYTES;
            queuedBytes.addAndGet(size);
            applier.execute(() -> {
                try {
                    // once a follow is stopped, what it read ahead is let go: the standby is whole after any frame,
                    // and working through up to MAX_QUEUED_BYTES of frames (each snapshot two fsyncs) took minutes
                    if (!result.isDone() && !(stopping && standby != null)) apply(frame);
                } catch (RuntimeException | Error e) { // an Error too: the applier must never die silently
                    result.completeExceptionally(e);
                    ch.close();
                } finally {
                    frame.release();
                }
                long left = queuedBytes.addAndGet(-size);
                if (left < MAX_QUEUED_BYTES && left + size >= MAX_QUEUED_BYTES && !result.isDone()) ch.read(); // reads had stopped
            });
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            if (queuedBytes.get() < MAX_QUEUED_BYTES && !result.isDone()) ctx.read(); // else the applier asks once it caught up
            else readsHeld = true;
        }

        @Override
        public boolean endReceived() {
            return endReceived;
        }

        @Override
        public long framesReceived() {
            return framesReceived;
        }

        @Override
        public boolean readsHeldSinceAsked() {
            boolean held = readsHeld || queuedBytes.get() >= MAX_QUEUED_BYTES;
            readsHeld = queuedBytes.get() >= MAX_QUEUED_BYTES; // still held: the next window starts held
            return held;
        }

        /** Ends the transfer, on the applier after the frames queued before it (as the idle timeout does). */
        @Override
        public void tooSlow(ChannelHandlerContext ctx, String why) {
            applier.execute(() -> result.completeExceptionally(new BackupException(standby == null ? why
                    : why + "; the follow ends: " + standbyHolds())));
            ctx.close();
        }

        /**
         * Applies one frame; one that ends before the fields it carries do (its CRC right: a sender that built it so) is
         * refused as malformed, naming its type, rather than failing with the buffer's bounds.
         */
        private void apply(Frame f) {
            try {
                applyFields(f);
            } catch (IndexOutOfBoundsException e) {
                throw new BackupException("the sender sent a malformed " + ShipProtocol.typeName(f.type) + " frame of " + f.payload.capacity()
                        + " bytes: it ends before the fields it carries do", e);
            }
        }

        private void applyFields(Frame f) {
            switch (f.type) {
                case ShipProtocol.HEADER:
                    writer.header(f.payload);
                    break;
                case ShipProtocol.TABLE:
                    writer.table(f.payload);
                    break;
                case ShipProtocol.PAGES:
                    writer.pages(f.payload);
                    progress.received(writer.received().pages(), writer.imagePages(), writer.bytes());
                    break;
                case ShipProtocol.END: {
                    VarveConfig committed = writer.end(f.payload);
                    ImageDigest d = writer.received();
                    image = new BackupResult(finalTarget, writer.snapshotId(), d.tables(), d.entries(), writer.bytes(), System.nanoTime() - started,
                            writer.verifyNanos(), 0);
                    if (!follow) {
                        result.complete(image);
                    } else {
                        VarveConfig config = standbyConfig(committed);
                        try {
                            standby = new StandbyWriter(config, writer.snapshotId(), writer.snapshotRank(), mapRewriteMinLines);
                        } catch (IllegalArgumentException e) { // a setting the open refuses: the data region, which is the sender's
                            throw new BackupException("the image is complete in " + target + ", but the standby cannot open on it: it takes a data"
                                    + " region as large as the sender's (" + config.dataRegionSize() + " bytes, as the sender's HEADER says), and " + e.getMessage(), e);
                        }
                        latestSenderSnapshot = writer.snapshotId();
                        progress.imageComplete(image, config);
                    }
                    break;
                }
                case ShipProtocol.ERROR:
                    throw new BackupException((standby == null ? "the sender refused: " : "the follow stream ended: ") + Frame.readString(f.payload));
                default:
                    if (standby == null) throw new BackupException("the sender sent an unexpected " + ShipProtocol.typeName(f.type) + " frame");
                    checkSequence(f);
                    long declared = f.type == ShipProtocol.SNAPSHOT ? f.payload.getLong(f.payload.readerIndex() + 8) : 0;
                    standby.apply(f.type, f.payload);
                    if (f.type == ShipProtocol.SNAPSHOT) latestSenderSnapshot = declared; // once the standby took it
                    progress.followed(standby.changesApplied(), latestSenderSnapshot);
            }
        }

        /**
         * Reads a follow frame's sequence number and refuses it unless it is the next one: LSNs have gaps of their own
         * (a write's LSN is its WAL position), so without it a frame left out or repeated on the way would go unseen.
         */
        private void checkSequence(Frame f) {
            long sequence = f.payload.readLong();
            if (sequence != nextFollowFrame) {
                String what = Long.compareUnsigned(sequence, nextFollowFrame) > 0
                        ? Long.toUnsignedString(sequence - nextFollowFrame) + " left out" : "a repeat, or out of order";
                throw new BackupException("the sender sent follow frame " + Long.toUnsignedString(sequence) + " (" + ShipProtocol.typeName(f.type)
                        + ") where frame " + nextFollowFrame + " comes next (" + what + "); nothing of it is applied, and the follow ends: "
                        + standbyHolds());
            }
            nextFollowFrame++;
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            // after the frames already queued: an END still waiting there completes the transfer
            applier.execute(() -> {
                if (standby != null && stopping) {
                    result.complete(new BackupResult(image.target(), image.snapshotId(), image.tables(), image.entries(), image.bytes(),
                            image.nanos(), image.verifyNanos(), standby.changesApplied()));
                } else if (standby != null) {
                    result.completeExceptionally(new BackupException("the follow stream from " + from + " ended (connection closed) after "
                            + standby.changesApplied() + " writes; " + standbyHolds()));
                } else {
                    result.completeExceptionally(new BackupException("the connection to " + from + " closed after "
                            + writer.received().pages() + " of " + writer.imagePages() + " pages, before the image was complete"));
                }
            });
        }

        /** What a follow that ended leaves: the standby as of the last frame applied. Applier thread. */
        private String standbyHolds() {
            return "the standby " + target + " holds everything up to sender snapshot " + latestSenderSnapshot + " and the writes after it that arrived";
        }

        /** Closes the standby (after the applier stopped). */
        void closeStandby() {
            if (standby != null) standby.close();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof IdleStateEvent) {
                if (queuedBytes.get() >= MAX_QUEUED_BYTES) return; // reads wait for the applier here, not for the sender
                String silent = "nothing arrived from the sender for " + said(idleTimeout);
                applier.execute(() -> result.completeExceptionally(new BackupException(standby == null ? silent
                        : silent + " while following (it sends a heartbeat every second); the follow ends: " + standbyHolds())));
                ctx.close(); // after the failure was queued: it comes before the one the closed connection queues
            } else {
                ctx.fireUserEventTriggered(evt);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            result.completeExceptionally(new BackupException("transfer from " + from + " failed: " + cause.getMessage(), cause));
            ctx.close();
        }
    }
}
