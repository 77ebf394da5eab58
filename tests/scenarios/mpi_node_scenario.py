"""Run a script as one rank of a 2-node MPI job on this one machine:
``mpirun -np 4 python mpi_node_scenario.py SCRIPT ...``.

Lightning's ``MPIEnvironment`` groups ranks into nodes by host name, and rank 0's host name is the job's main
address. Each rank here reports ``127.0.0.<1 + rank // RANKS_PER_NODE>`` as its host name (every ``127.*`` address
is this machine's loopback), so the ranks form nodes of ``RANKS_PER_NODE`` as on a cluster.
"""

import os
import runpy
import socket
import sys

_host = f"127.0.0.{1 + int(os.environ['OMPI_COMM_WORLD_RANK']) // int(os.environ['RANKS_PER_NODE'])}"
socket.gethostname = lambda: _host
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
