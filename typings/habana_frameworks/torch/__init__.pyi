from . import core as core
from . import hpu as hpu
