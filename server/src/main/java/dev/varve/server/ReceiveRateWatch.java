package dev.varve.server;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.concurrent.ScheduledFuture;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The receiver's bound on a sender that sends, but too little to matter: the idle timeout alone let a sender hold a
 * receiver forever by sending a byte just inside each one. Every {@code window} (twice the idle timeout, so that a
 * sender gone silent meets the idle timeout first, which says so more plainly) the bytes that arrived in it must come
 * to {@code minRate} bytes a second, while the image arrives; after its END only while a frame is under way and none
 * arrived in the window (an idle follow stream sends heartbeats, a few bytes a second, and the window may end in one
 * of them). A window in which the receiver held its reads itself (its applier behind) is let be. Sits before the
 * {@link FrameDecoder}; event loop only.
 */
final class ReceiveRateWatch extends ChannelInboundHandlerAdapter {
    /** What the watch asks of the receiver. */
    interface Receiver {
        /** Whether the image's END frame arrived. */
        boolean endReceived();

        /** Frames that arrived so far. */
        long framesReceived();

        /** Whether the receiver held its reads at any time since the last call (it is asked once a window). */
        boolean readsHeldSinceAsked();

        /** Ends the transfer: the sender sent too little. */
        void tooSlow(ChannelHandlerContext ctx, String why);
    }

    private final Duration window;
    private final long minRate;
    private final long minBytes;
    private final FrameDecoder decoder;
    private final Receiver receiver;
    private long bytes;
    private long frames;
    private ScheduledFuture<?> check;

    /** Watches for at least {@code minRate} bytes a second (at least 1) over each {@code window}. */
    ReceiveRateWatch(Duration window, long minRate, FrameDecoder decoder, Receiver receiver) {
        this.window = window;
        this.minRate = minRate;
        this.minBytes = (long) Math.ceil(minRate * (window.toNanos() / 1e9));
        this.decoder = decoder;
        this.receiver = receiver;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        long nanos = window.toNanos();
        check = ctx.executor().scheduleAtFixedRate(() -> check(ctx), nanos, nanos, TimeUnit.NANOSECONDS);
        super.channelActive(ctx);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
        if (msg instanceof ByteBuf) bytes += ((ByteBuf) msg).readableBytes();
        super.channelRead(ctx, msg);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        if (check != null) check.cancel(false);
        super.channelInactive(ctx);
    }

    private void check(ChannelHandlerContext ctx) {
        long got = bytes;
        bytes = 0;
        long framesBefore = frames;
        frames = receiver.framesReceived();
        if (receiver.readsHeldSinceAsked() || got >= minBytes) return;
        if (receiver.endReceived() && (!decoder.midFrame() || frames != framesBefore)) return;
        check.cancel(false);
        receiver.tooSlow(ctx, "the sender sent " + got + " bytes in the last " + SnapshotBackup.said(window) + (receiver.endReceived() ? " of a frame it began" : "")
                + ", below the least the receiver takes, " + minRate + " bytes/s (SnapshotBackup.minReceiveRate)");
    }
}
