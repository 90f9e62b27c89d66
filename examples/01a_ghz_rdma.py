"""Demo 1a: demo 1 over rdma (RoCE v2; Soft-RoCE in the VM harness). The coprocessor is an
executor process: started here (``--local``, the default) or already running elsewhere
(``--peer HOST:PORT``, started with ``python -m backline serve --transport rdma --bind
HOST:PORT --fn 0=steane --fn 1=steane``).

    python examples/01a_ghz_rdma.py --rdma-device rxe0 --gid-index 1 [--peer 10.0.0.2:7878]
"""

from ghz import arguments, ghz_program, report, steane_c_function

from backline import Backline, Controller, Coprocessor, Endpoint

args = arguments(
    __doc__,
    peer=dict(default=None, help="HOST:PORT of a running executor (default: start one here)"),
    bind=dict(default="127.0.0.1:7878", help="where a local executor binds (default 127.0.0.1:7878)"),
    rdma_device=dict(default=None, help="RDMA device, e.g. rxe0"),
    gid_index=dict(type=int, default=None, help="GID index (RoCE v2: usually 1 on Soft-RoCE)"),
)
endpoint = Endpoint(address=args.peer or args.bind, rdma_device=args.rdma_device, gid_index=args.gid_index)
dev = Backline(
    controller=Controller(hardware="cpu", wires=3),
    coprocessors=[Coprocessor(hardware="cpu", coprocessor_fn=None if args.peer else steane_c_function(),
                              remote=True if args.peer else "process", endpoint=endpoint)],
    transport="rdma",
    qec_code="steane",
    noise=args.noise,
    seed=args.seed,
    print_after_all=args.print_after_all,
)
report(ghz_program(dev, args.shots)(), dev, "demo 1a (rdma, implicit QEC, C Steane function)", save=args.save_samples)
