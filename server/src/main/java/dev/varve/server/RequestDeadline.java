package dev.varve.server;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandler;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.concurrent.ScheduledFuture;

import java.util.concurrent.TimeUnit;

/**
 * Cuts slow HTTP clients: a connection's first request must arrive whole within the deadline of the connection's
 * accept, and each later one within the deadline of its own first byte, or the client gets 408 and the connection
 * closes. An idle-state event (no traffic at all) closes it too. The idle handler alone would not do: a client
 * trickling one byte at a time never looks idle. The HTTP decoder yields nothing until a request's line and headers are whole, so
 * the first byte of a later request on a kept-alive connection is seen by {@link #byteWatch()}, ahead of the decoder.
 */
final class RequestDeadline extends ChannelDuplexHandler {
    private final long deadlineNanos;
    private final long acceptedNanos;
    private ScheduledFuture<?> timer;

    /** @param acceptedNanos when the connection was accepted ({@link System#nanoTime}): the first request's start */
    RequestDeadline(long deadlineNanos, long acceptedNanos) {
        this.deadlineNanos = deadlineNanos;
        this.acceptedNanos = acceptedNanos;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        arm(ctx, acceptedNanos); // the sniffer adds this handler on the connection's first bytes
    }

    /** The handler to put ahead of the HTTP decoder: any bytes start the deadline unless it runs already. */
    ChannelInboundHandler byteWatch() {
        return new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext watchCtx, Object msg) {
                ChannelHandlerContext ctx = watchCtx.pipeline().context(RequestDeadline.this);
                if (ctx != null) arm(ctx, System.nanoTime());
                watchCtx.fireChannelRead(msg);
            }
        };
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof HttpObject) {
            if (timer == null) arm(ctx, System.nanoTime());
            if (msg instanceof LastHttpContent) disarm();
        }
        ctx.fireChannelRead(msg);
    }

    /** Starts the deadline of a request that began at {@code startNanos}, unless one runs already. */
    private void arm(ChannelHandlerContext ctx, long startNanos) {
        if (timer != null) return;
        long left = Math.max(0, deadlineNanos - (System.nanoTime() - startNanos));
        timer = ctx.executor().schedule(() -> HttpAdminHandler.refuseAndClose(ctx, 408, "the request did not arrive in time"),
                left, TimeUnit.NANOSECONDS);
    }

    private void disarm() {
        if (timer != null) timer.cancel(false);
        timer = null;
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof IdleStateEvent) ctx.close();
        else ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        disarm();
        ctx.fireChannelInactive();
    }
}
